// Writing a walk's pages: each in a transaction with the sweep's progress, so that the checkpoint
// only ever covers pages whose records are committed, all of them from the first.
import type { RecordPage } from '../../api-client/index.ts'
import type { RecordId } from '../../resources/index.ts'
import { upsertRecords } from '../../store/records.ts'
import type { WalkCheckpoint } from './checkpoint.ts'
import type { SweepContext } from './context.ts'

export interface PageApplier {
  /** Resolves once the next page may be given: this one applied, or being applied on a connection. */
  apply(page: RecordPage, checkpoint: WalkCheckpoint, options?: { extra?: boolean }): Promise<void>
  /**
   * Resolves when every page given has committed and the checkpoint covers the last of them; rejects
   * with the first failure (the checkpoint then covers no page after the one that failed).
   */
  settled(): Promise<void>
}

interface Pending {
  checkpoint: WalkCheckpoint
  ids: Set<RecordId>
  committed: boolean
  done: Promise<void>
}

/**
 * Applies pages, each in a transaction with its progress. With one connection a page commits before
 * the next one starts. With more, a page is written while the pages before it are still being written,
 * when it shares no record with them: a record on two pages is written in page order, and two
 * statements replacing one parent's children at once would keep both sets.
 *
 * Transactions never wait for each other in JavaScript (a wait PostgreSQL cannot see could close a
 * deadlock it would not detect); they may commit out of order. A transaction writes the checkpoint
 * only when every page before its own has committed, and then covers the committed pages after it as
 * well. A page that commits before an earlier one is covered by a later checkpoint (the earlier page's,
 * or the next one's, or the one `settled` writes): a crash in between fetches it again, never skips.
 */
export function pageApplier(
  ctx: SweepContext,
  connections: number,
  key: (record: Record<string, unknown>) => RecordId,
): PageApplier {
  // Pages given and not yet covered by a committed checkpoint, in page order.
  const pending: Pending[] = []
  // Pages given at most from the first one not covered: bounds what a crash makes fetch again.
  const window = 2 * connections
  let saving: Promise<unknown> = Promise.resolve()
  const failures: unknown[] = []
  const check = () => {
    if (failures.length) throw failures[0]
  }

  /** The furthest committed page `entry`'s commit would make the checkpoint cover, if any. */
  function coverage(entry: Pending): Pending | undefined {
    const index = pending.indexOf(entry)
    if (pending.slice(0, index).some((other) => !other.committed)) return undefined
    let last = entry
    for (const other of pending.slice(index + 1)) {
      if (!other.committed) break
      last = other
    }
    return last
  }

  /** Runs `ctx.save` after the saves before it: each adds the requests spent since the last one. */
  function save(work: () => Promise<void>): Promise<void> {
    const saved = saving.then(work)
    saving = saved.catch(() => {})
    return saved
  }

  async function write(entry: Pending, page: RecordPage, extra: boolean): Promise<void> {
    let covered: Pending | undefined
    await ctx.db.transaction().execute(async (trx) => {
      await upsertRecords(trx, ctx.resource, page.records, { source: 'fetch', fetchedAt: page.fetchedAt })
      await save(() => {
        // Decided from the commits known when the save runs.
        covered = coverage(entry)
        const progress = { records: page.records.length, pages: extra ? 0 : 1 }
        return ctx.save(trx, covered ? { ...progress, checkpoint: covered.checkpoint } : progress)
      })
    })
    entry.committed = true
    if (covered) pending.splice(0, pending.indexOf(covered) + 1)
    ctx.applied('fetch', page.records.length)
  }

  return {
    async apply(page, checkpoint, options = {}) {
      check()
      ctx.rejected.push(...page.rejected)
      // Wait for a free connection, for the pages that share a record with this one, and for the
      // checkpoint to catch up when the window is full.
      for (;;) {
        const running = pending.filter((entry) => !entry.committed)
        const waits =
          running.length >= connections
            ? running // the first to finish frees a connection
            : pending.length >= window
              ? running.slice(0, 1) // the first one not committed holds the checkpoint back
              : running.filter((other) => page.records.some((record) => other.ids.has(key(record))))
        if (waits.length === 0) break
        await Promise.race(waits.map((entry) => entry.done.catch(() => {})))
        check()
      }
      const entry: Pending = {
        checkpoint,
        ids: new Set(page.records.map(key)),
        committed: false,
        done: Promise.resolve(),
      }
      pending.push(entry)
      entry.done = write(entry, page, options.extra === true).catch((error: unknown) => {
        failures.push(error)
        throw error
      })
      entry.done.catch(() => {})
      if (connections === 1) await entry.done
    },
    async settled() {
      for (const entry of [...pending]) await entry.done.catch(() => {})
      check()
      const last = pending.at(-1)
      // Every page committed; the last ones committed before an earlier one and are not covered yet.
      if (last) {
        await save(() => ctx.save(ctx.db, { checkpoint: last.checkpoint }))
        pending.length = 0
      }
    },
  }
}
