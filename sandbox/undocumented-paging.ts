// How the reservation service pages the indexes whose paging the document does not show (tags,
// webforms): a setting of the sandbox, changeable while it runs. The default is the least helpful
// plausible behaviour: `perpage` ignored (pages of a size of the service's choosing) and a page past
// the last answered with the last one again, so that a client sees a repeated page rather than an
// empty one. `page: 'ignored'` is an index that is not paged at all: every request answers the whole
// list. `{ perpage: 'honoured', page: 'honoured' }` is the kinder variant, paging like the contacts.
import { z } from 'zod'
import type { Paging } from './listing.ts'

export const undocumentedPagingSchema = z.strictObject({
  /** `ignored`: pages of `pageSize`, whatever `perpage` asks; `honoured`: `perpage`, up to maxPerpage. */
  perpage: z.enum(['ignored', 'honoured']),
  /** `clamped`: past the last page, the last one again; `honoured`: empty; `ignored`: not paged, all. */
  page: z.enum(['clamped', 'ignored', 'honoured']),
  /** Records on a page when `perpage` is ignored. */
  pageSize: z.number().int().min(1),
})
export type UndocumentedPaging = z.infer<typeof undocumentedPagingSchema>
export const undocumentedPagingPatchSchema = undocumentedPagingSchema.partial()
export type UndocumentedPagingPatch = z.infer<typeof undocumentedPagingPatchSchema>

export function defaultUndocumentedPaging(): UndocumentedPaging {
  return { perpage: 'ignored', page: 'clamped', pageSize: 50 }
}

/** The page served for `asked` (perpage and page as parsed from the query). */
export function undocumentedPageOf<R>(rows: readonly R[], asked: Paging, paging: UndocumentedPaging): R[] {
  if (paging.page === 'ignored') return [...rows]
  const perpage = paging.perpage === 'ignored' ? paging.pageSize : asked.perpage
  const last = Math.max(1, Math.ceil(rows.length / perpage))
  const page = paging.page === 'clamped' ? Math.min(asked.page, last) : asked.page
  const start = (page - 1) * perpage
  return rows.slice(start, start + perpage)
}
