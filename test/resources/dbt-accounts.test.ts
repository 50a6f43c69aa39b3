// The union models of `crm-sync schema --dbt` with accounts (src/resources/dictionary/dbt-union.ts), run
// on PostgreSQL as dbt compiles them there: each model reads the table of every account by name, and
// returns the rows of each with source_relation naming its account, for accounts migrated as
// ACCOUNTS_FILE's accounts are.
import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { unionModels } from '../../src/resources/dictionary/dbt-union.ts'
import { mirrorTables } from '../../src/resources/dictionary/index.ts'
import { accountSchemas, forAccount } from '../../src/store/account-schemas.ts'
import { migrateToLatest } from '../../src/store/migrate.ts'
import { useTestDatabase } from '../support/database.ts'

const database = useTestDatabase()

/** What dbt compiles a model to on PostgreSQL: `{{ source('crm_north', 'people') }}` is crm_north.people. */
function compiled(model: string): string {
  const text = model
    .replaceAll(/\{\{ source\('([a-z0-9_]+)', '([a-z0-9_]+)'\) \}\}/g, '$1.$2')
    .replaceAll(/\{\{ adapter\.quote\('([a-z0-9_]+)'\) \}\}/g, '"$1"')
  expect(text).not.toContain('{{')
  return text
}

const modelOf = (accounts: string[], name: string): string => {
  const model = unionModels(accounts).find((candidate) => candidate.name === name)
  if (!model) throw new Error(`no model ${name}`)
  return compiled(model.sql)
}

beforeAll(async () => {
  for (const account of ['north', 'south'])
    await migrateToLatest(forAccount(database.db, accountSchemas(account)))
  // The same ids in both accounts, as two CRM accounts have.
  await sql`
    insert into crm_north.people (id, name) values (1, 'Ada');
    insert into crm_south.people (id, name) values (1, 'Bo'), (2, 'Cy');
    insert into crm.people (id, name) values (9, 'of no account');
    insert into crm_north.addresses (_parent_resource, _parent_id, _ordinal, _raw, "primary")
      values ('crm.people', 1, 0, '{}', true);
    insert into crm_south.addresses (_parent_resource, _parent_id, _ordinal, _raw, "primary")
      values ('crm.people', 2, 0, '{}', false);
  `.execute(database.db)
})

describe('the union models of accounts north and south', () => {
  it('returns the rows of both accounts, each with its source_relation', async () => {
    const { rows } = await sql
      .raw<{ source_relation: string; id: number; name: string }>(
        `select source_relation, id, name from (${modelOf(['north', 'south'], 'crm__people')}) people order by 1, 2`,
      )
      .execute(database.db)
    expect(rows).toEqual([
      { source_relation: 'north', id: 1, name: 'Ada' },
      { source_relation: 'south', id: 1, name: 'Bo' },
      { source_relation: 'south', id: 2, name: 'Cy' },
    ])

    // A child table, and a column named with a reserved word (quoted by dbt's adapter.quote).
    const addresses = await sql
      .raw<{ source_relation: string; _parent_id: number; primary: boolean }>(
        `select source_relation, _parent_id, "primary" from (${modelOf(['north', 'south'], 'crm__addresses')}) a order by 1`,
      )
      .execute(database.db)
    expect(addresses.rows).toEqual([
      { source_relation: 'north', _parent_id: 1, primary: true },
      { source_relation: 'south', _parent_id: 2, primary: false },
    ])
  })

  it('runs every model, whose columns are source_relation then the table’s', async () => {
    const models = unionModels(['north', 'south'])
    expect(models.map((model) => model.of)).toEqual(mirrorTables)
    const text = (await database.pool.query(`select 'text'::regtype::oid as oid`)).rows[0]?.oid
    for (const model of models) {
      const { fields, rows } = await database.pool.query(`${compiled(model.sql)} limit 0`)
      expect(rows, model.name).toEqual([])
      expect(
        fields.map((field) => field.name),
        model.name,
      ).toEqual(['source_relation', ...model.of.columns.map((column) => column.name)])
      expect(fields[0]?.dataTypeID, model.name).toBe(Number(text))
    }
  })

  it('fails, naming the table, when an account is not migrated, rather than returning fewer rows', async () => {
    await expect(sql.raw(modelOf(['east', 'north'], 'crm__people')).execute(database.db)).rejects.toThrow(
      /relation "crm_east.people" does not exist/,
    )
  })
})
