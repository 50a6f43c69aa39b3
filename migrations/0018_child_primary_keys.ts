// Every child table gets a primary key: (_parent_resource, _parent_id, _ordinal). The store numbers the
// items a parent's record holds for a table 0, 1, ... in the order the record lists them, so the key
// holds whatever the upstream sends: an item listed twice (the same tag twice) is two rows at two
// places, where a key on the item's own values (parent, tag id) would refuse the whole batch carrying
// it, and items without an id would have no key at all. Loaders that read the mirror by logical
// replication need the key (the tables' replica identity) to apply updates and deletes of these rows.
//
// Rows that would break the key go first: all but one row at one place of one parent. Writers lock the
// parent (0007), and 0007 removed such copies from every parent whose `_raw` carries the includes of
// the table; copies left by an older race may remain where the parent's last write came without them.
// The most recently written copy stays: no record says which one is right, and the next write of the
// parent with its includes replaces whatever differs. The index on (_parent_resource, _parent_id) goes:
// the key's index begins with those columns. Adding a key holds an exclusive lock on its table while
// the key's index is built: writes and reads of that table wait meanwhile.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

export const CHILD_TABLES = [
  'crm.tags',
  'crm.addresses',
  'crm.contact_details',
  'crm.positions',
  'crm.custom_fields',
  'crm.deal_people',
  'crm.project_people',
  'crm.note_links',
  'reservations.contact_tags',
]

const KEY = '_parent_resource, _parent_id, _ordinal'

const constraintName = (table: string) => `${table.split('.')[1]}_pkey`

/** The plain indexes on exactly (_parent_resource, _parent_id) of a table, schema-qualified. */
async function parentIndexes(db: Kysely<any>, table: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select quote_ident(n.nspname) || '.' || quote_ident(c.relname) as name
    from pg_index i
    join pg_class c on c.oid = i.indexrelid
    join pg_namespace n on n.oid = c.relnamespace
    where i.indrelid = ${table}::regclass and not i.indisunique and i.indpred is null
      and array(select a.attname::text from unnest(i.indkey) with ordinality k(attnum, position)
        join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum order by k.position)
        = array['_parent_resource', '_parent_id']`.execute(db)
  return rows.map((row) => row.name)
}

export async function up(db: Kysely<any>): Promise<void> {
  for (const table of CHILD_TABLES) {
    await sql
      .raw(`
        delete from ${table} c using (
          select ctid as row_id,
            row_number() over (partition by ${KEY} order by _synced_at desc, ctid desc) as copy
          from ${table}
        ) r
        where c.ctid = r.row_id and r.copy > 1`)
      .execute(db)
    await sql
      .raw(`alter table ${table} add constraint ${constraintName(table)} primary key (${KEY})`)
      .execute(db)
    for (const index of await parentIndexes(db, table)) await sql.raw(`drop index ${index}`).execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of CHILD_TABLES) {
    await sql.raw(`alter table ${table} drop constraint ${constraintName(table)}`).execute(db)
    await sql.raw(`create index on ${table} (_parent_resource, _parent_id)`).execute(db)
  }
}
