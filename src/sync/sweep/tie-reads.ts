// Reading a group of ties again, when the walk saw fewer of its records than the positions it covers
// (ties.ts says how such a group is found, and which requests a round asks for); docs/how-sync-works.md,
// "Ties at page boundaries".
import type { FetchedRecord, Order, RecordPage } from '../../api-client/index.ts'
import type { RecordId } from '../../resources/index.ts'
import type { SweepContext } from './context.ts'
import type { Sighting } from './tie-order.ts'
import { boundsIn, requestsKey, roundPages, type TieGroup, windowFor } from './ties.ts'

/**
 * Reads the groups that straddled a page boundary without showing whole, one after the other (while
 * the walk is not aborted): the records they had hidden, as pages to apply. `walked`: the records of
 * the walk's last pages, in page order, which each reading's order is compared with (tie-order.ts).
 */
export async function readTieGroups(
  ctx: SweepContext,
  order: Order,
  groups: readonly (TieGroup | null)[],
  key: (record: Record<string, unknown>) => RecordId,
  walked: readonly Sighting[],
): Promise<RecordPage[]> {
  const found: RecordPage[] = []
  for (const group of groups) {
    if (!group || ctx.aborted()) continue
    // The group's own records as the walk met them, across every page it covered.
    const seen = [
      ...[...group.ids].map((id) => ({ id, time: group.time })),
      ...walked.filter((record) => record.time !== group.time),
    ]
    const hidden = await readTieGroup(ctx, order, group, key, seen)
    if (hidden) found.push(hidden)
  }
  return found
}

// Requests for reading one group again before the walk goes on without it (a warning says so): a few,
// and more for every page the group covers. With a new random order on every request, the last of
// its records show slowest: a group of 861 in pages of 250 (bulk-edit groups of an account of 200,000)
// takes about 22 requests, each a page over most of it that shows any record with a chance of 0.29.
const TIE_REQUESTS_BASE = 12
const TIE_REQUESTS_PER_PAGE = 8

/**
 * Reads a group of ties that straddled a page boundary again until it shows whole (ties.ts): its
 * records the walk did not see, as a page to apply, or null when there are none.
 */
async function readTieGroup(
  ctx: SweepContext,
  order: Order,
  group: TieGroup,
  key: (record: Record<string, unknown>) => RecordId,
  walked: readonly Sighting[],
): Promise<RecordPage | null> {
  const { pageSize } = group
  const isTied = (record: FetchedRecord | undefined) =>
    record !== undefined && Date.parse(record.updated_at ?? '') === group.time
  // Records the walk had not seen, and the ids each round of reading again showed.
  const found = new Map<RecordId, FetchedRecord>()
  const shown = new Set<RecordId>()
  // What the first round showed, in page order, to compare with the walk's (tie-order.ts).
  let firstShown: Sighting[] | undefined
  const used = new Set<string>()
  const margin = Math.max(1, Math.ceil(pageSize / 4))
  // Its positions, with a neighbour on each side: a page that shows both neighbours holds it whole.
  let at = (group.startPage - 1) * pageSize + group.startIndex
  let first = Math.max(0, at - 1)
  let last = at + group.positions
  let positions = group.positions
  let fetchedAt: Date | undefined
  let requests = 0
  // The walk's own sighting counts as a round while the group keeps its size (no record of it changed,
  // which would move it out of the group and leave its id among those seen).
  const whole = () =>
    (positions === group.positions ? new Set([...group.ids, ...shown]) : shown).size >= positions
  // Rounds in a row that showed none of its records: it moves faster than it is read.
  let lost = 0
  const most = TIE_REQUESTS_BASE + TIE_REQUESTS_PER_PAGE * Math.ceil(group.positions / pageSize)
  for (let round = 0; requests < most && lost < 2 && !whole() && !ctx.aborted(); round++) {
    const window = windowFor(first, last, pageSize, pageSize)
    // Without one page that holds it: pages around it or inside it, a new page size each round, and
    // every fifth round the pages around it with its neighbours, which tell whether it moved (a group
    // of 300 in pages of 250 shows whole after 2 or 3 rounds inside it).
    const bounded = window !== null || round % 5 === 4
    const asked = window ? [window] : roundPages(first, last, at, at + positions - 1, pageSize, used, bounded)
    used.add(requestsKey(asked))
    const answers: RecordPage[] = []
    for (const request of asked) {
      answers.push(await ctx.reader.index(ctx.resource, { ...request, order }))
      requests++
    }
    fetchedAt ??= answers[0]?.fetchedAt
    const records = answers.flatMap((answer) => answer.records)
    const tied = records.filter(isTied)
    firstShown ??= records.map((record) => ({ id: key(record), time: Date.parse(record.updated_at ?? '') }))
    for (const record of tied) {
      const id = key(record)
      shown.add(id)
      if (!group.ids.has(id)) found.set(id, record)
    }
    lost = tied.length > 0 ? 0 : lost + 1
    // Where the group is now: records that change meanwhile move to the front and shift it down, and
    // a record of it that changes leaves it. A bound seen places it; both bounds count it.
    const bounds = boundsIn(asked, answers, isTied)
    if (bounds.start !== null) at = bounds.start
    if (bounds.start !== null && bounds.end !== null) positions = bounds.end - bounds.start + 1
    else if (bounds.end !== null) at = bounds.end - positions + 1
    else if (bounds.start === null && bounded) {
      // Read around it and no bound seen: it reaches beyond what was read.
      at = Math.max(0, at - margin)
      positions += 2 * margin
    }
    first = Math.max(0, at - 1)
    last = at + positions
  }
  const hidden = [...found.values()]
  const fields = {
    updatedAt: new Date(group.time).toISOString(),
    positions,
    seen: group.ids.size,
    hidden: hidden.length,
    requests,
  }
  const learnt = firstShown && ctx.tieOrders.learn(ctx.resource.name, walked, firstShown, hidden.length)
  if (learnt) {
    ctx.logger.info(
      learnt === 'trusted'
        ? 'the upstream keeps the order of records with one updated_at: groups across page boundaries are read again only now and then'
        : 'the upstream ordered records with one updated_at differently: every group across a page boundary is read again',
    )
  }
  if (!whole()) {
    ctx.logger.warn(
      fields,
      'a group of records with one updated_at did not show whole when read again; the walk goes on without the rest',
    )
  } else {
    ctx.logger.debug(
      fields,
      'a group of records with one updated_at across a page boundary, read whole again',
    )
  }
  if (hidden.length === 0 || !fetchedAt) return null
  return { page: group.startPage, size: hidden.length, records: hidden, rejected: [], fetchedAt }
}
