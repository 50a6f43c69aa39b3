// SIGTERM while deliveries pour in: at the signal, deliveries are posted and not yet answered and the
// engine holds work not yet done (inbox rows to apply, refreshes queued or running). Every delivery
// that was answered 2xx is in the inbox (the row is its job: accepted until a worker applies it), and
// a restarted engine applies all of them. Nothing acknowledged is lost.

import { chmod, mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../sandbox/index.ts'
import { freePort } from '../src/database/free-port.ts'
import { webhookPath } from '../src/receiver/app.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from './support/database.ts'
import { type CliProcess, readyStatus, runCli, waitFor } from './support/process.ts'

const SECRET = 'shutdown-secret-0123456789abcdef'
let sandbox: Sandbox | undefined
let database: TestDatabase | undefined
const processes: CliProcess[] = []

afterAll(async () => {
  for (const run of processes) {
    run.child.kill('SIGKILL')
    await run.exited
  }
  await sandbox?.stop()
  if (database) await dropTestDatabase(database)
})

describe('graceful shutdown', () => {
  it('loses no acknowledged delivery on SIGTERM', async () => {
    const upstream = await startSandbox({ seedSize: 50, behaviour: { crmRateLimit: null } })
    sandbox = upstream
    database = await createTestDatabase()
    const cwd = await mkdtemp(join(tmpdir(), 'crm-sync-shutdown-'))
    await chmod(cwd, 0o755)
    const port = await freePort()
    const env = {
      CRM_BASE_URL: upstream.crmUrl,
      CRM_API_KEY: upstream.crmApiKey,
      DATABASE_URL: database.url,
      PORT: String(port),
      WEBHOOK_SECRET: SECRET,
      CRM_RATE_LIMIT: '1000',
      LOG_LEVEL: 'warn',
    }
    const first = runCli(['start'], { cwd, env })
    processes.push(first)
    await waitFor(() => readyStatus(port), 30_000, '/readyz')

    const ids = upstream.control.crm.liveIds('people')
    const acknowledged: number[] = []
    let refused = 0
    let sent = 0
    /** Posted and not yet answered. */
    let inFlight = 0
    let signalled = false
    /** Posted before the signal, answered 200 after it. */
    let acknowledgedAcrossSignal = 0
    const post = async () => {
      const id = ids[sent++ % ids.length]
      const postedBeforeSignal = !signalled
      inFlight++
      try {
        const response = await fetch(`http://127.0.0.1:${port}${webhookPath(SECRET, 'person', 'update')}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'person', event: 'update', record_id: id }),
        })
        if (response.status === 200) {
          acknowledged.push(((await response.json()) as { inbox_id: number }).inbox_id)
          if (postedBeforeSignal && signalled) acknowledgedAcrossSignal++
        } else await response.body?.cancel()
      } catch {
        refused++
      } finally {
        inFlight--
      }
    }
    // 8 senders; SIGTERM after 200 acknowledgements; they go on until the server refuses them.
    const senders = Array.from({ length: 8 }, async () => {
      while (refused < 20 && sent < 5000) await post()
    })
    await waitFor(async () => (acknowledged.length >= 200 ? true : undefined), 30_000, '200 acknowledgements')
    const { db } = database
    // Work under way at the signal: deliveries not yet applied, refreshes queued or running (their
    // records keep receiving deliveries, so they wait for a quiet moment that does not come).
    const { rows: open } = await sql<{ inbox: number; refreshes: number }>`
      select (select count(*)::int from sync.inbox where status = 'accepted') as inbox,
        (select count(*)::int from pgboss.job where name = 'record-refresh'
         and state in ('created', 'retry', 'active')) as refreshes`.execute(db)
    const inFlightAtSignal = inFlight
    signalled = true
    first.child.kill('SIGTERM')
    expect(inFlightAtSignal, 'deliveries posted and not yet answered at the signal').toBeGreaterThan(0)
    expect(open[0]?.refreshes, 'refreshes queued or running at the signal').toBeGreaterThan(0)
    expect(await first.exited).toBe(0)
    await Promise.all(senders)
    const rows = await db
      .selectFrom('sync.inbox')
      .select(['id', 'status'])
      .where('id', 'in', acknowledged)
      .execute()
    expect(rows).toHaveLength(acknowledged.length)
    // processed before the stop, or still accepted (queued) for the next engine; never failed or rejected
    expect(rows.filter((row) => row.status !== 'processed' && row.status !== 'accepted')).toEqual([])
    const unapplied = rows.filter((row) => row.status === 'accepted')

    // a restarted engine applies what the first one left
    const second = runCli(['start'], { cwd, env })
    processes.push(second)
    await waitFor(
      async () => {
        const left = await db
          .selectFrom('sync.inbox')
          .select('id')
          .where('id', 'in', acknowledged)
          .where('status', '=', 'accepted')
          .execute()
        return left.length === 0 ? true : undefined
      },
      60_000,
      'every acknowledged delivery applied',
    )
    console.log(
      `shutdown: ${acknowledged.length} acknowledged (${acknowledgedAcrossSignal} posted before the signal and answered after it), ` +
        `${inFlightAtSignal} in flight and ${open[0]?.inbox} inbox rows and ${open[0]?.refreshes} refreshes open at the signal, ` +
        `${unapplied.length} left for the restart, ${refused} refused`,
    )
  }, 120_000)
})
