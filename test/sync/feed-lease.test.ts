// The activity feed between replicas: two crm-sync processes on one database, exactly one of them
// polling the log; when that one is killed (kill -9 of its process group), the other takes the lease
// over and polls within 10 s, and a task change made after the kill reaches the mirror through it (no
// incremental run is due for a day).
import { readFile } from 'node:fs/promises'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { freePort } from '../../src/database/free-port.ts'
import { removeWorkdirs, workdir } from '../cli/run.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { type CliProcess, readyStatus, runCli, waitFor } from '../support/process.ts'

let sandbox: Sandbox | undefined
let database: TestDatabase | undefined
const engines: CliProcess[] = []

afterEach(async () => {
  for (const engine of engines.splice(0)) {
    try {
      process.kill(-(engine.child.pid as number), 'SIGKILL')
    } catch {}
    await engine.exited
  }
  await sandbox?.stop()
  if (database) await dropTestDatabase(database)
  await removeWorkdirs()
})

/** The process group a process belongs to (field 5 of /proc/<pid>/stat). */
async function groupOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2])
}

interface FeedRow {
  lease_owner: string | null
  polled_at: Date | null
}

describe.skipIf(process.platform !== 'linux')('the activity feed across two replicas', () => {
  it('is polled by one; when it is killed, the other polls within 10 s and brings task changes', async () => {
    sandbox = await startSandbox({ seedSize: { people: 20, tasks: 20 }, behaviour: { crmRateLimit: null } })
    database = await createTestDatabase()
    const db = database.db
    const cwd = await workdir()
    const start = async () => {
      const port = await freePort()
      const engine = runCli(['start'], {
        cwd,
        group: true,
        env: {
          CRM_BASE_URL: sandbox?.crmUrl as string,
          CRM_API_KEY: sandbox?.crmApiKey as string,
          DATABASE_URL: database?.url as string,
          PORT: String(port),
          HOST: '127.0.0.1',
          ACTIVITY_POLL_SECONDS: '5',
          INCREMENTAL_SYNC_INTERVAL: '86400',
          CRM_RATE_LIMIT: '1000',
          LOG_LEVEL: 'info',
        },
      })
      engines.push(engine)
      await waitFor(
        async () => ((await readyStatus(port)) === 200 ? true : undefined),
        60_000,
        'ready',
      ).catch((error) => {
        throw new Error(`${error.message}\n${engine.output()}`)
      })
      return engine
    }
    const both = [await start(), await start()]
    const feed = async () =>
      (await sql<FeedRow>`select lease_owner, polled_at from sync.activity_feed`.execute(db)).rows[0]
    // The first poll waits for the first sync of what the feed covers: on a machine busy with other
    // test files that takes a while.
    const holder = await waitFor(async () => (await feed())?.polled_at ?? undefined, 60_000, 'a poll').then(
      feed,
    )
    // Exactly one polls: the lease stays with the same owner over several polls.
    const first = holder?.lease_owner as string
    await waitFor(
      async () => {
        const now = await feed()
        expect(now?.lease_owner).toBe(first)
        return (now?.polled_at?.getTime() ?? 0) > (holder?.polled_at?.getTime() ?? 0) + 4_000 || undefined
      },
      20_000,
      'two more polls by the same replica',
    )
    const group = await groupOf(Number(first.split(':').at(-2)))
    const victim = both.find((engine) => engine.child.pid === group)
    expect(victim, `the holder ${first} is one of the two engines`).toBeDefined()

    const killedAt = Date.now()
    process.kill(-group, 'SIGKILL')
    await victim?.exited
    const [task] = sandbox.control.crm.liveIds('tasks') as [number]
    sandbox.control.crm.update('tasks', task, { name: 'after the kill' })
    const takenOver = await waitFor(
      async () => {
        const now = await feed()
        const polled = now?.polled_at?.getTime() ?? 0
        return now?.lease_owner !== first && polled > killedAt ? (polled - killedAt) / 1000 : undefined
      },
      20_000,
      'the other replica to poll',
    )
    expect(takenOver).toBeLessThanOrEqual(10)
    await waitFor(
      async () => {
        const { rows } = await sql<{ name: string }>`select name from crm.tasks where id = ${task}`.execute(
          db,
        )
        return rows[0]?.name === 'after the kill' || undefined
      },
      20_000,
      'the task change through the feed',
    ).catch((error: Error) => {
      // What the survivor's feed did, for the failure message.
      const lines = both
        .flatMap((engine) => engine.output().split('\n'))
        .filter((line) => /feed|refresh/.test(line))
      throw new Error(`${error.message}\n${lines.slice(-20).join('\n')}`)
    })
  }, 180_000)
})
