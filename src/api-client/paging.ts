// Walks an index page by page without trusting the upstream to say where it ends. A page shorter than
// the `perpage` asked for is not the end: the CRM caps page sizes (500 in its document, 250 in its
// current one) and may cap lower. The effective size is learned as the largest page seen; the end is
// an empty page, a page shorter than that size, or the same page three times in a row (`pageRepeats`).
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

/**
 * What a page that repeats the one before (the same records, in the same order) means. Newest first, a
 * page's worth of records created or changed between two requests moves the next page onto the one
 * just read: the walk skips the repeat and reads on (`again`), or it would end with every older page
 * unread. An index that ignores `page` answers its first page every time, and one that answers past
 * its end with its last page answers that again and again: the same page a third time in a row ends
 * the walk (`end`), at the cost of one request more than ending at the first repeat. The function
 * returned is given each page's key (its ids joined), in page order.
 */
export function pageRepeats(): (key: string) => 'new' | 'again' | 'end' {
  let previous: string | undefined
  let inARow = 0
  return (key) => {
    inARow = key !== '' && key === previous ? inARow + 1 : 0
    previous = key
    return inARow === 0 ? 'new' : inARow === 1 ? 'again' : 'end'
  }
}

export async function* paginate<P extends PageLike>(
  fetchPage: (page: number) => Promise<P>,
  options: PagingOptions,
): AsyncGenerator<P> {
  const idOf = options.idOf ?? ((record) => record.id)
  let pageSize = 0
  const repeats = pageRepeats()
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
    const repeat = repeats(ids)
    if (repeat === 'end') return
    if (repeat === 'again') continue
    yield result
    if (result.size < pageSize) return
    pageSize = Math.max(pageSize, result.size)
  }
}
