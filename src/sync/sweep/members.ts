// The members of groups (crm.filter_groups → crm.filter_group_members), read after the walk of the
// groups. A group's members are the pages of `GET /api/<path>/{id}`: records of its model type in
// their index form, of which only the ids are kept (the records themselves are their resource's to
// mirror, with the includes its sweeps ask for). Membership is a saved filter evaluated upstream, so it
// changes with the records, without a word: a full sweep reads every group; any other sweep reads only
// groups never read, or whose count or updated_at changed since they were last read.
//
// A group's member set is replaced in one transaction, and only after its pages were read to the end;
// a read that fails part way leaves the previous set (and the group is read again by the next sweep).
// The end is an empty page, a page shorter than an earlier one, one page three times in a row
// (../../api-client/paging.ts `pageRepeats`), or a page short of the `perpage` asked for once the
// group's own count is reached: a group of up to 249 members costs one request. Upstream errors end
// the sweep failed, as in the walk; the sets written before stay.
import { PagingError, type RejectedRecordError, UpstreamGoneError } from '../../api-client/index.ts'
import { pageRepeats } from '../../api-client/paging.ts'
import { bigint } from '../../resources/columns.ts'
import { type AnyResource, type MemberTable, type Resource, resources } from '../../resources/index.ts'
import {
  type GroupToRead,
  groupsToRead,
  removeMembersOfGoneGroups,
  replaceMembers,
} from '../../store/members.ts'
import { tombstone } from '../../store/records.ts'
import type { SweepContext } from './context.ts'

/** The resource whose records a group of that model type holds: `Person` → crm.people. */
export function memberResource(service: string, type: string | null): AnyResource | undefined {
  const wanted = type?.toLowerCase().replace(/[^a-z]/g, '')
  if (!wanted) return undefined
  return resources.find(
    (resource) =>
      resource.service === service &&
      (resource.wrapper === wanted || resource.path === wanted || resource.webhookModel === wanted),
  )
}

/** Reads the members of the groups due (see the head of this file), then drops those of gone groups. */
export async function readMembers(ctx: SweepContext, options: { all: boolean }): Promise<void> {
  const members = ctx.resource.members
  if (!members) return
  const groups = await groupsToRead(ctx.db, ctx.resource, members, { all: options.all, since: ctx.startedAt })
  let read = 0
  for (const group of groups) {
    ctx.checkStop()
    if (await readGroup(ctx, members, group)) read++
  }
  const removed = await removeMembersOfGoneGroups(ctx.db, ctx.resource, members)
  ctx.logger.debug({ due: groups.length, read, removed }, 'group members read')
}

/** The pages of one group as a resource the reader can walk: bare ids are all that is checked. */
function pagesOf(groups: Resource, group: number, member: AnyResource): Resource {
  return {
    ...member,
    path: `${groups.path}/${group}`,
    includes: [],
    columns: { id: bigint },
    ordered: false,
    children: [],
  }
}

async function readGroup(ctx: SweepContext, members: MemberTable, group: GroupToRead): Promise<boolean> {
  const member = memberResource(ctx.resource.service, group.type)
  if (!member) {
    ctx.logger.warn(
      { group: group.id, type: group.type },
      'a group of a model type no mirrored resource has: its members are not read',
    )
    return false
  }
  const pages = pagesOf(ctx.resource, group.id, member)
  const perPage = ctx.settings.verification.upstreams.crm.pageSize
  const ids = new Set<number>()
  const rejected: RejectedRecordError[] = []
  let requests = 0
  let largest = 0
  const repeats = pageRepeats()
  for (let page = 1; ; page++) {
    if (page > ctx.settings.maxPages) {
      throw new PagingError(`group ${group.id}: more than ${ctx.settings.maxPages} pages of members`)
    }
    ctx.checkAbort()
    let answer: Awaited<ReturnType<typeof ctx.reader.index>>
    try {
      answer = await ctx.reader.index(pages, { page, perPage })
    } catch (error) {
      // 404: the group was deleted after the walk saw it (or before a resumed walk's checkpoint).
      if (!(error instanceof UpstreamGoneError)) throw error
      await ctx.db.transaction().execute(async (trx) => {
        await tombstone(trx, ctx.resource, [group.id], error.sentAt)
        await ctx.save(trx, { pages: requests + 1, tombstoned: 1 })
      })
      return false
    }
    requests++
    rejected.push(...answer.rejected)
    if (answer.size === 0) break
    const pageIds = answer.records.map((record) => Number(record.id))
    // A page again after a shift is skipped; the same page three times in a row ends the read.
    const repeat = repeats(pageIds.join(','))
    if (repeat === 'end') break
    if (repeat === 'again') continue
    for (const id of pageIds) ids.add(id)
    if (answer.size < largest) break
    largest = Math.max(largest, answer.size)
    if (answer.size < perPage && group.count !== null && ids.size >= group.count) break
  }
  if (rejected.length > 0) {
    // Members the sync cannot name: the set is not known, the previous one stays.
    ctx.rejected.push(...rejected)
    await ctx.save(ctx.db, { pages: requests })
    return false
  }
  const memberIds = [...ids].sort((a, b) => a - b)
  return ctx.db.transaction().execute(async (trx) => {
    const written = await replaceMembers(trx, ctx.resource, members, {
      id: group.id,
      memberResource: member.name,
      ids: memberIds,
    })
    await ctx.save(trx, { pages: requests })
    return written
  })
}
