// One watched stretch of the demo: it makes changes upstream on a schedule and waits for the mirror
// to match the sandbox, refreshing the view about once a second. Ctrl-C (the signal) ends any wait.
// A change the sandbox refuses is logged, and the stream goes on.
import { setTimeout as sleep } from 'node:timers/promises'
import { compareMirror, converged, type TableTruth } from '../sandbox/mirror-truth.ts'
import { readInboxBacklog } from '../src/store/status-queries.ts'
import { changeStream, RefusedChange } from './changes.ts'
import type { DemoView } from './view.ts'
import type { DemoWorld } from './world.ts'

const REFRESH_MS = 1000

export class NotConverged extends Error {
  readonly tables: TableTruth[]
  constructor(seconds: number, tables: TableTruth[]) {
    super(`the mirror did not match the sandbox within ${seconds} s`)
    this.tables = tables
  }
}

export function watch(world: DemoWorld, view: DemoView, signal: AbortSignal) {
  const startedAt = Date.now()
  let tables: TableTruth[] = []
  let changesMade = 0
  let changesPlanned: number | null = 0
  const refresh = async () => {
    tables = await compareMirror(world.db, world.sandbox)
    view.show({
      elapsedMs: Date.now() - startedAt,
      changesMade,
      changesPlanned,
      counters: world.sandbox.control.counters(),
      tables,
    })
  }
  // Converged: every table in sync, no delivery still on its way, none waiting in the inbox.
  const settled = async () => {
    await refresh()
    return (
      converged(tables) &&
      world.sandbox.control.pendingDeliveries() === 0 &&
      (await readInboxBacklog(world.db)).depth === 0
    )
  }
  return {
    async waitForConvergence(timeoutSeconds: number): Promise<void> {
      const deadline = Date.now() + timeoutSeconds * 1000
      while (!(await settled())) {
        if (Date.now() > deadline) throw new NotConverged(timeoutSeconds, tables)
        await sleep(REFRESH_MS, undefined, { signal })
      }
    },
    /** Makes `count` changes (endless when null), `gapMs` apart. */
    async stream(count: number | null, gapMs: number, randomSeed: number): Promise<void> {
      const changes = changeStream(world.sandbox, randomSeed)
      changesPlanned = count === null || changesPlanned === null ? null : changesPlanned + count
      const begun = Date.now()
      let refreshedAt = 0
      for (let made = 0; count === null || made < count; made++) {
        try {
          changes.next()
          changesMade++
        } catch (error) {
          if (!(error instanceof RefusedChange)) throw error
          view.phase(`  skipped: ${error.message}`)
        }
        if (Date.now() - refreshedAt >= REFRESH_MS) {
          refreshedAt = Date.now()
          await refresh()
        }
        // On a schedule, so that refreshing the view does not stretch the stream.
        await sleep(Math.max(0, begun + (made + 1) * gapMs - Date.now()), undefined, { signal })
      }
    },
  }
}

export function describeDifferences(tables: TableTruth[]): string {
  return tables
    .filter((table) => table.inSync !== table.upstream || table.stale > 0)
    .map(
      (table) =>
        `  ${table.table}: ${table.inSync}/${table.upstream} in sync, ${table.stale} stale (e.g. ${table.differences
          .slice(0, 5)
          .map((difference) => `${difference.id} ${difference.what}`)
          .join('; ')})`,
    )
    .join('\n')
}
