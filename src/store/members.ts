// Member sets of groups (a filter group's members, see `MemberTable` in src/resources/types.ts): which
// groups to read, a group's set replaced as one, and the sets of groups no longer live removed.
// sync.member_reads keeps, per group, when its pages were last read completely and the group's count
// and updated_at then.
import { sql } from 'kysely'
import type { MemberTable, Resource } from '../resources/index.ts'
import type { Db } from './database.ts'

export interface GroupToRead {
  id: number
  /** The group's model type as the upstream names it (`Person`). */
  type: string | null
  /** The group's number of members as the upstream counts them, when it says. */
  count: number | null
}

const table = (name: string) => sql.table(name)
const column = (name: string) => sql.ref(name)

/**
 * Live groups whose members are to be read, in id order: with `all`, every one not read since `since`
 * (a resumed sweep goes on where it was); otherwise those never read, and those whose count or
 * updated_at differ from what they were when last read.
 */
export async function groupsToRead(
  db: Db,
  resource: Resource,
  members: MemberTable,
  options: { all: boolean; since: Date },
): Promise<GroupToRead[]> {
  const changed = options.all
    ? sql`(r.group_id is null or r.read_at < ${options.since})`
    : sql`(r.group_id is null or r.element_count is distinct from g.${column(members.countColumn)}
        or r.updated_at is distinct from g.updated_at)`
  const { rows } = await sql<GroupToRead>`
    select g.id, g.${column(members.typeColumn)}::text as type, g.${column(members.countColumn)}::int as count
    from ${table(resource.name)} g
    left join sync.member_reads r on r.resource = ${resource.name} and r.group_id = g.id
    where g._deleted_at is null and ${changed}
    order by g.id`.execute(db)
  return rows.map((row) => ({ ...row, id: Number(row.id) }))
}

/**
 * Replaces the group's member set with `ids` (records of `memberResource`), if the group is still live,
 * and records the read. Rows of members that stay are kept as they are. Returns whether it wrote.
 */
export async function replaceMembers(
  trx: Db,
  resource: Resource,
  members: MemberTable,
  group: { id: number; memberResource: string; ids: number[] },
): Promise<boolean> {
  const { rows: live } = await sql<{ count: number | null; updated_at: Date | null }>`
    select ${column(members.countColumn)}::int as count, updated_at from ${table(resource.name)}
    where id = ${group.id} and _deleted_at is null
    for update`.execute(trx)
  const row = live[0]
  if (!row) return false
  const groupColumn = column(members.groupColumn)
  await sql`
    delete from ${table(members.table)}
    where ${groupColumn} = ${group.id}
      and (member_resource <> ${group.memberResource} or member_id <> all(${group.ids}::bigint[]))
  `.execute(trx)
  await sql`
    insert into ${table(members.table)} (${groupColumn}, member_resource, member_id)
    select ${group.id}, ${group.memberResource}, unnest(${group.ids}::bigint[])
    on conflict do nothing
  `.execute(trx)
  await sql`
    insert into sync.member_reads (resource, group_id, element_count, updated_at, members, read_at)
    values (${resource.name}, ${group.id}, ${row.count}, ${row.updated_at}, ${group.ids.length}, now())
    on conflict (resource, group_id) do update set element_count = excluded.element_count,
      updated_at = excluded.updated_at, members = excluded.members, read_at = excluded.read_at
  `.execute(trx)
  return true
}

/** Removes the member sets (and reads) of groups that are tombstoned or were never mirrored. */
export async function removeMembersOfGoneGroups(
  db: Db,
  resource: Resource,
  members: MemberTable,
): Promise<number> {
  const groupColumn = column(members.groupColumn)
  const result = await sql`
    delete from ${table(members.table)} m
    where not exists (
      select from ${table(resource.name)} g where g.id = m.${groupColumn} and g._deleted_at is null
    )`.execute(db)
  await sql`
    delete from sync.member_reads r
    where r.resource = ${resource.name} and not exists (
      select from ${table(resource.name)} g where g.id = r.group_id and g._deleted_at is null
    )`.execute(db)
  return Number(result.numAffectedRows ?? 0)
}
