// An account's schemas (src/store/account-schemas.ts): every statement of an account's connections runs
// in its schemas, whether built or written as text; values are left alone; the migrations make the
// same objects (tables, columns, indexes, views, functions, triggers, comments) under the account's
// names as under the code's own, and leave the code's own schemas untouched.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { accountSchemas, forAccount, relationOf, schemasOf } from '../../src/store/account-schemas.ts'
import type { Db } from '../../src/store/database.ts'
import { applyDictionary } from '../../src/store/dictionary.ts'
import { inspectHistory, maintainHistory } from '../../src/store/history.ts'
import { migrateToLatest } from '../../src/store/migrate.ts'
import { withRetentionLock } from '../../src/store/retention.ts'
import { objectsOf } from '../support/catalog.ts'
import { useTestDatabase } from '../support/database.ts'

const database = useTestDatabase()
const north = accountSchemas('north')

const compiled = (db: Db, query: { compile(db: Db): { sql: string } }) => query.compile(db).sql

describe('statements of an account', () => {
  it('names an account’s schemas after it, and the one account without ACCOUNTS_FILE’s as the code does', () => {
    expect(north).toEqual({
      crm: 'crm_north',
      reservations: 'reservations_north',
      history: 'history_north',
      sync: 'sync_north',
      crm_live: 'crm_north_live',
      reservations_live: 'reservations_north_live',
    })
    expect(Object.entries(accountSchemas(null)).every(([logical, name]) => logical === name)).toBe(true)
  })

  it('renames the schemas of built queries and of sql text, not values or other names', () => {
    const db = forAccount(database.db, north)
    expect(compiled(db, db.selectFrom('crm.people').select('id'))).toBe(
      'select "id" from "crm_north"."people"',
    )
    expect(compiled(db, db.deleteFrom('sync.inbox').where('id', '=', 1))).toContain(
      'delete from "sync_north"."inbox"',
    )
    const text = sql`select p.id, 'crm.people' as name, x.crm.y from crm.people p join "history"."crm_people" h
      using (id) join crm_live.people l using (id) join sync.runs r on r.id = ${'crm.people'}
      where crmx.a = 1 and ${sql.table('reservations.contacts')}.id = 2`
    const out = text.compile(db)
    expect(
      out.sql,
    ).toBe(`select p.id, 'crm.people' as name, x.crm.y from crm_north.people p join "history_north"."crm_people" h
      using (id) join crm_north_live.people l using (id) join sync_north.runs r on r.id = $1
      where crmx.a = 1 and "reservations_north"."contacts".id = 2`)
    expect(out.parameters).toEqual(['crm.people'])
    const relations =
      sql`select ${'crm.tags'}::regclass, to_regclass(${'sync.inbox'}), ${'crm.tags'}`.compile(db)
    expect(relations.parameters).toEqual(['crm_north.tags', 'sync_north.inbox', 'crm.tags'])
    expect(compiled(db, sql.raw('create table crm.tags (id int)'))).toBe(
      'create table crm_north.tags (id int)',
    )
    expect(
      compiled(db, sql.raw('create schema if not exists sync; comment on schema "history" is \'x\'')),
    ).toBe('create schema if not exists sync_north; comment on schema "history_north" is \'x\'')
    expect(compiled(db, sql.raw('drop schema crm_live cascade; create schema crmx'))).toBe(
      'drop schema crm_north_live cascade; create schema crmx',
    )
  })

  it('leaves the statements of the code’s own schemas as written', () => {
    const db = database.db
    expect(forAccount(db, accountSchemas(null))).toBe(db)
    expect(compiled(db, db.selectFrom('crm.people').select('id'))).toBe('select "id" from "crm"."people"')
  })

  it('gives another account’s connections an account of their own, not both', () => {
    const south = forAccount(forAccount(database.db, north), accountSchemas('south'))
    expect(compiled(south, south.selectFrom('crm.people').select('id'))).toBe(
      'select "id" from "crm_south"."people"',
    )
    const none = forAccount(south, accountSchemas(null))
    expect(compiled(none, none.selectFrom('crm.people').select('id'))).toBe('select "id" from "crm"."people"')
  })

  it('gives each account’s retention a lock of its own', async () => {
    const south = forAccount(database.db, accountSchemas('south'))
    const taken = await withRetentionLock(forAccount(database.db, north), async () => ({
      south: await withRetentionLock(south, async () => 'south ran'),
      north: await withRetentionLock(forAccount(database.db, north), async () => 'north ran twice'),
    }))
    expect(taken).toEqual({ south: 'south ran', north: null })
  })

  it('knows the schemas of a connection and of its transactions', async () => {
    const db = forAccount(database.db, north)
    expect(schemasOf(db).crm).toBe('crm_north')
    expect(schemasOf(database.db).crm).toBe('crm')
    await db.transaction().execute(async (trx) => {
      expect(schemasOf(trx).sync).toBe('sync_north')
      expect(relationOf(trx, 'sync.inbox')).toBe('sync_north.inbox')
    })
    expect(relationOf(database.db, 'sync.inbox')).toBe('sync.inbox')
  })
})

describe('migrations of an account', () => {
  it('make the objects of the code’s schemas under the account’s names, and touch no other', async () => {
    const before = await objectsOf(database.db, null)
    expect(before.length).toBeGreaterThan(500)
    const db = forAccount(database.db, north)
    const applied = await migrateToLatest(db, { publication: null })
    expect(applied.length).toBeGreaterThan(20)
    expect(await objectsOf(database.db, 'north')).toEqual(before)
    expect(await objectsOf(database.db, null)).toEqual(before)
    // A second start finds everything current: nothing to apply, nothing to write.
    expect(await migrateToLatest(db, { publication: null })).toEqual([])
    expect(await applyDictionary(db)).toEqual({ views: 0, comments: 0 })
    expect(await maintainHistory(db)).toEqual({ created: [], seeded: 0, statements: 0 })
    expect((await inspectHistory(db)).state).toBe('current')
    expect(await objectsOf(database.db, 'north')).toEqual(before)
  })

  it('make objects that name no schema but the account’s (what Citus needs to move them as one)', async () => {
    const north = Object.values(accountSchemas('north'))
    const { rows } = await sql<{ what: string; text: string }>`
      select 'view ' || c.relname as what, pg_get_viewdef(c.oid) as text
      from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = any(${north}) and c.relkind = 'v'
      union all
      select 'function ' || p.proname, pg_get_functiondef(p.oid)
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = any(${north})
      union all
      select 'trigger ' || t.tgname || ' on ' || c.relname, pg_get_triggerdef(t.oid)
      from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = any(${north}) and not t.tgisinternal
      union all
      select 'constraint ' || k.conname, pg_get_constraintdef(k.oid)
      from pg_constraint k join pg_namespace n on n.oid = k.connamespace where n.nspname = any(${north})
    `.execute(database.db)
    expect(rows.length).toBeGreaterThan(100)
    // Every other schema of the database (the code's own among them), named anywhere in those texts.
    const { rows: schemas } = await sql<{ name: string }>`
      select nspname as name from pg_namespace where nspname <> all(${north})`.execute(database.db)
    const others = schemas.map((row) => row.name)
    const foreign = rows.flatMap((row) =>
      others
        .filter((schema) => new RegExp(`(?<![\\w.'])"?${schema}"?\\.`).test(row.text))
        .map((schema) => `${row.what}: ${schema}`),
    )
    expect(others).toContain('crm')
    expect(foreign).toEqual([])
    // And every object that depends on one of the account's relations is the account's.
    const { rows: outside } = await sql<{ name: string }>`
      select distinct dn.nspname || '.' || dc.relname as name
      from pg_depend d
      join pg_class rc on rc.oid = d.refobjid and d.refclassid = 'pg_class'::regclass
      join pg_namespace rn on rn.oid = rc.relnamespace
      join pg_rewrite w on w.oid = d.objid and d.classid = 'pg_rewrite'::regclass
      join pg_class dc on dc.oid = w.ev_class join pg_namespace dn on dn.oid = dc.relnamespace
      where rn.nspname = any(${north}) and dn.nspname <> all(${north})
    `.execute(database.db)
    expect(outside).toEqual([])
  })
})
