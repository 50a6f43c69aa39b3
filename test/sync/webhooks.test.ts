// Changes in the sandbox reach the mirror through webhooks alone, for every HOOK_OBJECT_TYPE:
// creates, updates, tag edits and destroys. A tag edit fires its parent's update only in the sandbox's
// kinder variant (whether the real upstream does is not published), which these tests name.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { startSandbox } from '../../sandbox/index.ts'
import { createTestDatabase } from '../support/database.ts'
import { startEngine, useEngineRig } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'

const rig = useEngineRig()

async function setUp(objectType: string) {
  const upstream = await startSandbox({ behaviour: { crmRateLimit: null, childChangesTouchParent: true } })
  rig.sandbox(upstream)
  const database = rig.database(await createTestDatabase())
  rig.engine(await startEngine(upstream, database.url, { HOOK_OBJECT_TYPE: objectType }))
  await waitFor(async () => (upstream.control.crm.hooks().length === 12 ? true : undefined), 10_000, 'hooks')
  return { sandbox: upstream, db: database.db }
}

describe.each(['lean', 'nested', 'api', 'flat'])('HOOK_OBJECT_TYPE=%s', (objectType) => {
  it('mirrors creates, updates, tag edits and destroys from deliveries', async () => {
    const { sandbox, db } = await setUp(objectType)
    const person = sandbox.control.crm.create('people', { name: 'Mustermann', first_name: 'Maxi' })
    const id = person.id as number
    sandbox.control.crm.update('people', id, { first_name: 'Max' })
    sandbox.control.crm.addTag('people', id, 'VIP')
    const doomed = sandbox.control.crm.create('companies', { name: 'Gone GmbH' })
    sandbox.control.crm.destroy('companies', doomed.id as number)
    await sandbox.control.drainDeliveries()

    const truth = sandbox.control.crm.get('people', id) as unknown as { updated_at: string }
    // converged: the latest fields and the tag (same-second payloads are settled by a fetch)
    await waitFor(
      async () => {
        const row = await db.selectFrom('crm.people').selectAll().where('id', '=', id).executeTakeFirst()
        const tags = await db.selectFrom('crm.tags').select('name').where('_parent_id', '=', id).execute()
        const latest = row?.first_name === 'Max' && row.updated_at?.getTime() === Date.parse(truth.updated_at)
        return latest && tags.map((tag) => tag.name).join() === 'VIP' ? row : undefined
      },
      15_000,
      'the person and its tag in the mirror',
    )
    const company = await waitFor(
      async () => {
        const row = await db
          .selectFrom('crm.companies')
          .selectAll()
          .where('id', '=', doomed.id as number)
          .executeTakeFirst()
        return row?._deleted_at ? row : undefined
      },
      15_000,
      'the company tombstoned',
    )
    expect(company._deleted_at).toBeInstanceOf(Date)
    const pending = async () => {
      const { rows } = await sql<{
        n: number
      }>`select count(*)::int as n from sync.inbox where status = 'accepted'`.execute(db)
      return rows[0]?.n === 0 ? true : undefined
    }
    await waitFor(pending, 15_000, 'every delivery processed')
    // lean and flat deliveries carry no record: the row comes from a fetch (a show, or an index page
    // that answered several), never from the payload
    const row = await db.selectFrom('crm.people').select('_source').where('id', '=', id).executeTakeFirst()
    if (objectType === 'lean' || objectType === 'flat') expect(row?._source).toBe('fetch')
  })
})

describe('silent cascades', () => {
  it('tombstones the tasks of a destroyed person at once, without a full sweep', async () => {
    const upstream = await startSandbox({ behaviour: { crmRateLimit: null } })
    rig.sandbox(upstream)
    const person = upstream.control.crm.create('people', { name: 'Mustermann' })
    const other = upstream.control.crm.create('people', { name: 'Musterfrau' })
    const task = (name: string, attachableId: unknown) =>
      upstream.control.crm.create('tasks', { name, attachable_type: 'Person', attachable_id: attachableId })
        .id
    const doomed = [task('call', person.id), task('write', person.id)]
    const kept = task('visit', other.id)
    const database = rig.database(await createTestDatabase())
    const { db } = database
    rig.engine(await startEngine(upstream, database.url, { HOOK_OBJECT_TYPE: 'lean' }))
    const liveTasks = async () =>
      (
        await db.selectFrom('crm.tasks').select('id').where('_deleted_at', 'is', null).orderBy('id').execute()
      ).map((row) => row.id)
    await waitFor(async () => ((await liveTasks()).length === 3 ? true : undefined), 15_000, 'the first sync')

    // The person's destroy is the only word the upstream says: its tasks go with it.
    upstream.control.crm.destroy('people', person.id as number)
    expect(upstream.control.crm.liveIds('tasks')).toEqual([kept])
    await waitFor(
      async () => ((await liveTasks()).join() === String(kept) ? true : undefined),
      15_000,
      'the tasks of the destroyed person tombstoned',
    )
    const tombstoned = await db
      .selectFrom('crm.tasks')
      .select('id')
      .where('_deleted_at', 'is not', null)
      .execute()
    expect(tombstoned.map((row) => row.id).sort()).toEqual([...doomed].sort())
    // No full sweep did it: the only runs are the first incremental ones (INCREMENTAL_SYNC_INTERVAL 300).
    const runs = await db.selectFrom('sync.runs').select(['mode']).execute()
    expect(runs.map((run) => run.mode)).not.toContain('full')
  })
})
