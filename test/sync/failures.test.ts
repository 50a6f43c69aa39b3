// The engine converges after the worst an operator meets: the CRM could not reach it while records
// changed (every delivery failed), and the engine was killed (SIGKILL) in the middle of a sweep.
import { chmod, mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { startSandbox } from '../../sandbox/index.ts'
import { freePort } from '../../src/database/free-port.ts'
import { createTestDatabase } from '../support/database.ts'
import { ENGINE_SECRET, startEngine, useEngineRig } from '../support/engine.ts'
import { type CliProcess, runCli, waitFor } from '../support/process.ts'
import { differences } from '../support/truth.ts'

const rig = useEngineRig()
const children: CliProcess[] = []

// Registered after the rig's, so run before it: the killed engines let go of the database first.
afterEach(async () => {
  for (const child of children.splice(0)) {
    child.child.kill('SIGKILL')
    await child.exited
  }
})

describe('failures', () => {
  it('converges after every delivery failed while records changed', async () => {
    const upstream = await startSandbox({
      seedSize: 30,
      seed: 3,
      behaviour: { crmRateLimit: null, reservationRateLimit: null },
    })
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    const { db } = database
    rig.engine(
      await startEngine(upstream, database.url, {
        INCREMENTAL_SYNC_INTERVAL: '10',
        CRM_RATE_LIMIT: '1000',
      }),
    )
    const converged = async () => ((await differences(db, upstream)).length === 0 ? true : undefined)
    await waitFor(converged, 60_000, 'the first sync')

    upstream.control.setFaults({ deliveries: { receiverDown: true } })
    const [first, second] = upstream.control.crm.liveIds('people')
    upstream.control.crm.update('people', first as number, { name: 'changed while down' })
    upstream.control.crm.destroy('people', second as number)
    upstream.control.crm.create('companies', { name: 'Created while down' })
    await upstream.control.drainDeliveries()
    expect(upstream.control.counters().deliveries.failed).toBeGreaterThanOrEqual(3)
    upstream.control.setFaults({ deliveries: { receiverDown: false } })

    const started = Date.now()
    await waitFor(converged, 60_000, 'convergence by the incremental run').catch(async () =>
      expect.fail((await differences(db, upstream)).join('\n')),
    )
    console.log(`deliveries failed: converged ${Date.now() - started} ms after the receiver came back`)
  }, 120_000)

  it('converges after the engine was killed in the middle of a sweep and started again', async () => {
    const upstream = await startSandbox({
      seedSize: { people: 3000, companies: 5, deals: 5, projects: 5, tasks: 5, contacts: 5, bookings: 5 },
      seed: 5,
      behaviour: { crmRateLimit: null, reservationRateLimit: null, maxPerpage: 100 },
      faults: { crm: { latencyMs: 100 } },
    })
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    const { db } = database
    const cwd = await mkdtemp(join(tmpdir(), 'crm-sync-kill-'))
    await chmod(cwd, 0o755)
    const port = await freePort()
    const env = {
      CRM_BASE_URL: upstream.crmUrl,
      CRM_API_KEY: upstream.crmApiKey,
      DATABASE_URL: database.url,
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      WEBHOOK_SECRET: ENGINE_SECRET,
      CRM_RATE_LIMIT: '1000',
      LOG_LEVEL: 'warn',
      // What a resumed walk misses (ties the upstream orders anew, across the pages it read before the
      // kill) the next verification finds: an interval short enough for one within the deadline.
      INCREMENTAL_SYNC_INTERVAL: '10',
    }
    const first = runCli(['start'], { cwd, env })
    children.push(first)
    // Kill it once the first sweep of people has checkpointed a few pages (of 30).
    await waitFor(
      async () => {
        const { rows } = await sql<{ pages: number }>`
          select pages from sync.run_resources where resource = 'crm.people' and status = 'running'`.execute(
          db,
        )
        return (rows[0]?.pages ?? 0) >= 3 ? true : undefined
      },
      60_000,
      'the people sweep under way',
    )
    first.child.kill('SIGKILL')
    await first.exited
    const killedAt = Date.now()
    const { rows: atKill } = await sql<{ pages: number }>`
      select pages from sync.run_resources where resource = 'crm.people' and status = 'running'`.execute(db)

    const second = runCli(['start'], { cwd, env })
    children.push(second)
    // The killed sweep's heartbeat goes stale within 10 s and is noticed within 4 more: it is taken
    // up again (its pages move on) within about 16 s, not at its six-hour expiry.
    await waitFor(
      async () => {
        const { rows } = await sql<{ pages: number }>`
          select pages from sync.run_resources where resource = 'crm.people' order by run_id limit 1`.execute(
          db,
        )
        return (rows[0]?.pages ?? 0) > (atKill[0]?.pages ?? 0) ? true : undefined
      },
      30_000,
      'the killed sweep taken up again',
    )
    const resumed = Date.now() - killedAt
    await waitFor(
      async () => ((await differences(db, upstream)).length === 0 ? true : undefined),
      240_000,
      'convergence after the restart',
    ).catch(async () => expect.fail(`${(await differences(db, upstream)).join('\n')}\n${second.output()}`))
    const elapsed = Date.now() - killedAt
    // the interrupted sweep itself is resumed from its checkpoint and finishes
    const rows = await waitFor(
      async () => {
        const { rows } = await sql<{ status: string; pages: number }>`
          select status, pages from sync.run_resources where resource = 'crm.people' order by run_id`.execute(
          db,
        )
        return rows[0]?.status === 'succeeded' ? rows : undefined
      },
      60_000,
      'the interrupted sweep to finish',
    )
    console.log(
      `killed mid-sweep: resumed ${resumed} ms and converged ${elapsed} ms after the kill; people sweeps ${JSON.stringify(rows)}`,
    )
  }, 300_000)
})
