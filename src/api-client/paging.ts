// Walks an index page by page without trusting the upstream to say where it ends. A page shorter than
// the `perpage` asked for is not the end: the CRM caps page sizes (500 in its document, 250 in its
// current one) and may cap lower. The effective size is learned as the largest page seen; the end is
// an empty page, a page shorter than that size, or the same page again (an index that ignores `page`).
// The count, when known, and a page limit bound the walk whatever the upstream does.
import { PagingError } from './errors.ts'

export interface PageLike {
  /** Items the upstream sent on this page, usable or not. */
  size: number
  records: readonly object[]
}

export interface PagingOptions {
  /** Records the upstream reported before the walk (its count), if known. */
  total?: number | null
  /** Pages fetched at most, whatever else happens. */
  maxPages: number
  /** A record's id, which tells a page repeated (default: its `id`; attachments: their `uuid`). */
  idOf?: (record: Record<string, unknown>) => unknown
}

/** Pages the count allows at the learned page size, with room for records created during the walk. */
export function pageAllowance(total: number, pageSize: number): number {
  const pages = Math.ceil(total / pageSize)
  return pages + Math.max(2, Math.ceil(pages / 10))
}

export async function* paginate<P extends PageLike>(
  fetchPage: (page: number) => Promise<P>,
  options: PagingOptions,
): AsyncGenerator<P> {
  const idOf = options.idOf ?? ((record) => record.id)
  let pageSize = 0
  let previous = ''
  for (let page = 1; ; page++) {
    if (page > options.maxPages) {
      throw new PagingError(`more than ${options.maxPages} pages: stopped at the page limit`)
    }
    if (options.total != null && pageSize > 0 && page > pageAllowance(options.total, pageSize)) {
      throw new PagingError(
        `more than ${page - 1} pages of ${pageSize} for a count of ${options.total}: stopped before page ${page}`,
      )
    }
    const result = await fetchPage(page)
    if (result.size === 0) return
    const ids = result.records.map((record) => String(idOf(record as Record<string, unknown>))).join(',')
    if (page > 1 && ids !== '' && ids === previous) return
    yield result
    if (result.size < pageSize) return
    pageSize = Math.max(pageSize, result.size)
    previous = ids
  }
}
