// Opt-in (DEMO_FOLLOW_E2E=1): a whole `npm run demo -- --follow` as a new user runs it, the default
// demo and then DEMO_FOLLOW_SECONDS (default 300) of following, a change every 2 s under faults. All
// along, the demo must stay healthy: nothing on stderr, no change refused, no error in crm-sync's log,
// /readyz answering 200, no run or delivery failed; and it must keep working: its changes go on, the
// mirror keeps catching up with them (the rows out of sync come back down), sweeps keep succeeding and
// webhook deliveries keep being applied. Then Ctrl-C: exit 0, its temporary folder removed.
//
//   DEMO_FOLLOW_E2E=1 npx vitest run test/demo/demo-follow.test.ts
//   DEMO_FOLLOW_E2E=1 DEMO_FOLLOW_SECONDS=60 DEMO_FOLLOW_RANDOM_SEED=2 npx vitest run test/demo/demo-follow.test.ts
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { settledWithin, waitFor } from '../support/process.ts'
import { folderOf, startDemo, stopDemosAfterEach } from './run-demo.ts'

const FOLLOW_SECONDS = Number(process.env.DEMO_FOLLOW_SECONDS ?? 300)
const RANDOM_SEED = process.env.DEMO_FOLLOW_RANDOM_SEED ?? '1'
// The demo before it follows: its first sync, 150 changes in 30 s, then up to its --timeout (300 s)
// to converge.
const UNTIL_FOLLOWING_MS = 420_000
// It prints a line of progress every 5 s or so while following.
const LINE_WITHIN_MS = 30_000
// What it must keep doing, at least once a minute: make changes, come back to at most this many rows
// out of sync, finish a sweep, apply a delivery. Never more than MAX_BEHIND rows out of sync.
const WINDOW_MS = 60_000
const CAUGHT_UP = 10
const MAX_BEHIND = 60

stopDemosAfterEach()

interface ProgressLine {
  changes: number
  inSync: number
  upstream: number
  text: string
}

const PROGRESS =
  /^ {2}[^·\n]+ · changes ([\d,]+) · deliveries [\d,]+ \([\d,]+ dropped\) · API requests [\d,]+ · rows in sync ([\d,]+)\/([\d,]+)$/gm
const number = (text: string | undefined) => Number((text ?? '').replaceAll(',', ''))

/** The progress lines printed since the demo began following. */
function progressLines(stdout: string): ProgressLine[] {
  const following = stdout.indexOf('\nFollowing:')
  if (following < 0) return []
  return [...stdout.slice(following).matchAll(PROGRESS)].map((match) => ({
    changes: number(match[1]),
    inSync: number(match[2]),
    upstream: number(match[3]),
    text: match[0].trim(),
  }))
}

interface Facts {
  runsSucceeded: number
  runsFailed: number
  lastApplied: number
  backlog: number
  deliveriesFailed: number
}

async function readFacts(pool: pg.Pool): Promise<Facts> {
  const { rows } = await pool.query<Record<keyof Facts, number>>(`
    select
      (select count(*)::int from sync.runs where status = 'succeeded') as "runsSucceeded",
      (select count(*)::int from sync.runs where status = 'failed') as "runsFailed",
      (select coalesce(max(id), 0)::int from sync.inbox where status = 'processed') as "lastApplied",
      (select count(*)::int from sync.inbox where status = 'accepted') as backlog,
      (select count(*)::int from sync.inbox where status in ('rejected', 'failed')) as "deliveriesFailed"`)
  return rows[0] as Facts
}

/** Lines of crm-sync's log (pino, JSON) at level error or above. */
const errorLines = (log: string) =>
  log.split('\n').filter((line) => {
    try {
      return line !== '' && (JSON.parse(line) as { level: number }).level >= 50
    } catch {
      return true // not JSON: something wrote to the log that is not a log line
    }
  })

describe.skipIf(!process.env.DEMO_FOLLOW_E2E)(`npm run demo -- --follow, ${FOLLOW_SECONDS} s`, () => {
  it(
    'stays healthy and keeps the mirror converging, then exits 0 on Ctrl-C and cleans up',
    async () => {
      const demo = startDemo(['--follow', '--random-seed', RANDOM_SEED])
      const started = Date.now()
      const shown = await demo.printed(/^ {2}npm run cli -- resync --full --wait$/m, UNTIL_FOLLOWING_MS)
      expect(shown, `the demo did not reach --follow\n${demo.stdout()}\n${demo.stderr()}`).not.toBeNull()
      const beforeFollowing = Date.now() - started
      const folder = folderOf(demo.stdout()) as string
      const databaseUrl = /^ {2}psql "([^"]+)"$/m.exec(demo.stdout())?.[1]
      const port = /http:\/\/127\.0\.0\.1:(\d+)\/admin\/status$/m.exec(demo.stdout())?.[1]
      expect(folder && existsSync(folder)).toBe(true)
      expect(databaseUrl).toBeDefined()
      expect(port).toBeDefined()

      const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 })
      pool.on('error', () => {})
      const logFile = join(folder, 'crm-sync.log')
      let logChecked = 0
      const baseline = await readFacts(pool)
      let facts = baseline
      let seen = 0
      let lines: ProgressLine[] = []
      const lastTime = { changes: Date.now(), caughtUp: Date.now(), sweep: Date.now(), delivery: Date.now() }
      let behind = { least: Number.POSITIVE_INFINITY, most: 0 }
      const followStart = Date.now()
      const followEnd = followStart + FOLLOW_SECONDS * 1000
      try {
        // The only timer of the test: the end of the follow. Each round waits for the next progress
        // line, then checks the demo's health and that it still moves.
        while (Date.now() < followEnd) {
          lines = await waitFor(
            async () => {
              const now = progressLines(demo.stdout())
              return now.length > seen || demo.ended() ? now : undefined
            },
            LINE_WITHIN_MS,
            `the next progress line of the demo\n${demo.stdout().slice(-2000)}`,
          )
          expect(demo.ended(), `the demo exited while following\n${demo.stdout()}\n${demo.stderr()}`).toBe(
            false,
          )
          const now = Date.now()
          const previous = lines[seen - 1]
          for (const line of lines.slice(seen)) {
            const outOfSync = line.upstream - line.inSync
            behind = { least: Math.min(behind.least, outOfSync), most: Math.max(behind.most, outOfSync) }
            expect(outOfSync, line.text).toBeLessThanOrEqual(MAX_BEHIND)
            if (outOfSync <= CAUGHT_UP) lastTime.caughtUp = now
          }
          const latest = lines[lines.length - 1] as ProgressLine
          if (!previous || latest.changes > previous.changes) lastTime.changes = now
          seen = lines.length

          // Healthy: nothing on stderr, no change refused, no error logged, ready, nothing failed.
          expect(demo.stderr()).toBe('')
          expect(demo.stdout()).not.toMatch(/^ {2}skipped: /m)
          const log = await readFile(logFile, 'utf8')
          const complete = log.slice(0, log.lastIndexOf('\n') + 1) // a line being written is read next time
          expect(errorLines(complete.slice(logChecked))).toEqual([])
          logChecked = complete.length
          expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200)
          const next = await readFacts(pool)
          expect(next).toMatchObject({ runsFailed: 0, deliveriesFailed: 0 })
          expect(next.backlog, 'deliveries waiting in the inbox').toBeLessThanOrEqual(MAX_BEHIND)
          if (next.runsSucceeded > facts.runsSucceeded) lastTime.sweep = now
          if (next.lastApplied > facts.lastApplied) lastTime.delivery = now
          facts = next

          // Still moving: within the last minute, each of these happened at least once.
          for (const [what, at] of Object.entries(lastTime)) {
            expect(now - at, `${what}: nothing for ${Math.round((now - at) / 1000)} s`).toBeLessThan(
              WINDOW_MS,
            )
          }
        }
      } finally {
        await pool.end()
      }

      const followed = Date.now() - followStart
      demo.signal('SIGINT')
      const stopped = Date.now()
      const exit = await settledWithin(demo.exited, 60_000)
      expect(exit.status, 'the demo did not exit within 60 s of Ctrl-C').toBe('fulfilled')
      const { code, stdout, stderr } = (exit as { value: Awaited<typeof demo.exited> }).value
      expect(code, `${stdout.slice(-3000)}\n${stderr}`).toBe(0)
      expect(stderr).toBe('')
      expect(stdout).toMatch(/^stopping \(once more to stop at once\)$/m)
      expect(existsSync(folder)).toBe(false)
      expect(existsSync(`${folder}.log`)).toBe(false)

      const first = lines[0] as ProgressLine
      const last = lines[lines.length - 1] as ProgressLine
      console.log(
        JSON.stringify({
          randomSeed: RANDOM_SEED,
          beforeFollowingSeconds: Math.round(beforeFollowing / 1000),
          followedSeconds: Math.round(followed / 1000),
          exitSeconds: Math.round((Date.now() - stopped) / 100) / 10,
          exitCode: code,
          progressLines: lines.length,
          changesWhileFollowing: last.changes - first.changes + 1,
          rowsOutOfSync: behind,
          sweepsSucceededWhileFollowing: facts.runsSucceeded - baseline.runsSucceeded,
          deliveriesAppliedUpToInboxId: facts.lastApplied,
          lastProgressLine: last.text,
          lastLines: stdout.trimEnd().split('\n').slice(-3),
        }),
      )
    },
    UNTIL_FOLLOWING_MS + FOLLOW_SECONDS * 1000 + 180_000,
  )
})
