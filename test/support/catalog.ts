// Every object of an account's schemas, as a sorted list of lines, for tests that compare schemas
// (test/store/account-schemas.test.ts) or check that a start changed none (test/accounts/).
import { sql } from 'kysely'
import { accountSchemas } from '../../src/store/account-schemas.ts'
import type { Db } from '../../src/store/database.ts'

interface CatalogRow {
  kind: string
  schema: string
  name: string
  detail: string | null
}

/** Every object of the account's schemas, with the account's names read back as the code's. */
export async function objectsOf(db: Db, account: string | null): Promise<string[]> {
  const schemas = Object.values(accountSchemas(account))
  const { rows } = await sql<CatalogRow>`
    select 'relation' as kind, n.nspname as schema, c.relname as name, c.relkind::text as detail
    from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = any(${schemas})
    union all
    select 'column', n.nspname, c.relname || '.' || a.attname, format_type(a.atttypid, a.atttypmod) ||
      coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') || case when a.attnotnull then ' not null' else '' end
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
    left join pg_attrdef d on d.adrelid = c.oid and d.adnum = a.attnum
    where n.nspname = any(${schemas}) and a.attnum > 0 and not a.attisdropped and c.relkind in ('r', 'v', 'p')
    union all
    select 'index', n.nspname, c.relname, pg_get_indexdef(c.oid)
    from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = any(${schemas}) and c.relkind = 'i'
    union all
    select 'view', n.nspname, c.relname, pg_get_viewdef(c.oid)
    from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = any(${schemas}) and c.relkind = 'v'
    union all
    select 'function', n.nspname, p.proname, pg_get_functiondef(p.oid)
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = any(${schemas})
    union all
    select 'trigger', n.nspname, c.relname || '.' || t.tgname, pg_get_triggerdef(t.oid)
    from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = any(${schemas}) and not t.tgisinternal
    union all
    select 'comment', n.nspname, c.relname || coalesce('.' || a.attname, ''), d.description
    from pg_description d join pg_class c on c.oid = d.objoid and d.classoid = 'pg_class'::regclass
    join pg_namespace n on n.oid = c.relnamespace
    left join pg_attribute a on a.attrelid = c.oid and a.attnum = d.objsubid and d.objsubid > 0
    where n.nspname = any(${schemas})
    union all
    select 'comment', n.nspname, '', obj_description(n.oid, 'pg_namespace') from pg_namespace n
    where n.nspname = any(${schemas})
    union all
    select 'comment', n.nspname, p.proname, obj_description(p.oid, 'pg_proc')
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = any(${schemas})
  `.execute(db)
  const logical = (text: string) => (account ? text.replaceAll(`_${account}`, '') : text)
  return rows.map((row) => logical(`${row.kind} ${row.schema} ${row.name}: ${row.detail}`)).sort()
}
