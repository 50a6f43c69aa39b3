// What the commands print: tables, times, the progress of `resync --wait` (bars in a terminal, plain
// lines elsewhere; failed sweeps drawn as failed, sweeps held by a rate limit saying so, log lines
// above the bars) and the summary of a finished run. No database: runs are built by hand.
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ago, count, duration, instant } from '../../src/cli/format.ts'
import { createRunProgress } from '../../src/cli/run-progress.ts'
import { runSummary } from '../../src/cli/run-summary.ts'
import { formatTable } from '../../src/cli/table.ts'
import { createLogOutput } from '../../src/cli/terminal-log.ts'
import { createLogger } from '../../src/log.ts'
import type { RunView } from '../../src/store/runs.ts'
import { terminalStream } from './terminal.ts'

type Sweep = RunView['resources'][number]

function sweep(resource: string, fields: Partial<Sweep> = {}): Sweep {
  return {
    resource,
    status: 'queued',
    records: 0,
    pages: 0,
    remote_count: null,
    api_requests: 0,
    reconciled: 0,
    tombstoned: 0,
    started_at: null,
    finished_at: null,
    error: null,
    waiting: false,
    state: 'sent',
    ...fields,
  }
}

function run(resources: Sweep[], fields: Partial<RunView> = {}): RunView {
  return {
    id: 7,
    mode: 'full',
    status: 'running',
    requested_by: 'cli',
    created_at: new Date('2025-01-01T10:00:00Z'),
    started_at: new Date('2025-01-01T10:00:00Z'),
    finished_at: null,
    error: null,
    resources,
    ...fields,
  }
}

/** A stream that records what is written; a terminal when `tty`. */
function stream(tty: boolean) {
  const written: string[] = []
  return {
    isTTY: tty,
    columns: 120,
    written,
    write(text: string) {
      written.push(text)
      return true
    },
    // cli-progress moves the cursor with these on a terminal
    cursorTo: () => true,
    moveCursor: () => true,
    clearLine: () => true,
    clearScreenDown: () => true,
    text: () => written.join(''),
  }
}

describe('formatTable', () => {
  it('pads columns to their widest cell and aligns numbers right', () => {
    const table = formatTable(
      [{ header: 'resource' }, { header: 'rows', align: 'right' }],
      [
        ['crm.people', '1,200'],
        ['crm.users', '5'],
      ],
    )
    expect(table.split('\n')).toEqual(['resource     rows', 'crm.people  1,200', 'crm.users       5'])
  })
})

describe('format', () => {
  it('shows counts, instants, durations and ages', () => {
    expect(count(1234567)).toBe('1,234,567')
    expect(count(null)).toBe('-')
    expect(instant('2025-01-02T03:04:05.678Z')).toBe('2025-01-02 03:04:05Z')
    expect(instant(null)).toBe('-')
    expect(duration(42_000)).toBe('42 s')
    expect(duration(30 * 60_000)).toBe('30 min')
    expect(duration(125 * 60_000)).toBe('2 h 5 min')
    expect(duration(3 * 86_400_000)).toBe('3 d')
    const now = Date.parse('2025-01-01T12:00:00Z')
    expect(ago('2025-01-01T11:57:00Z', now)).toBe('3 min ago')
    expect(ago('2025-01-01T11:59:18Z', now)).toBe('42 s ago')
    expect(ago(null, now)).toBe('never')
  })
})

describe('progress of resync --wait', () => {
  it('prints a plain line per change of status when the output is not a terminal', () => {
    const out = stream(false)
    let now = 0
    const progress = createRunProgress(out, { now: () => now })
    progress.show(run([sweep('crm.people'), sweep('crm.users')]))
    progress.show(run([sweep('crm.people', { status: 'running', records: 500, remote_count: 1200 })]))
    now = 1000 // records moved, but too soon for another line
    progress.show(run([sweep('crm.people', { status: 'running', records: 1000, remote_count: 1200 })]))
    now = 7000
    progress.show(run([sweep('crm.people', { status: 'running', records: 1100, remote_count: 1200 })]))
    progress.note('a note')
    progress.show(
      run([
        sweep('crm.people', {
          status: 'succeeded',
          records: 1200,
          remote_count: 1200,
          started_at: new Date('2025-01-01T10:00:00Z'),
          finished_at: new Date('2025-01-01T10:00:12Z'),
        }),
      ]),
    )
    progress.stop()
    expect(out.text().trim().split('\n')).toEqual([
      'crm.people: queued, 0 records',
      'crm.users: queued, 0 records',
      'crm.people: running, 500 of 1,200 records',
      'crm.people: running, 1,100 of 1,200 records',
      'a note',
      'crm.people: succeeded, 1,200 of 1,200 records, 12 s',
    ])
    expect(out.text()).not.toContain('\u001b[') // no terminal control sequences
  })

  it('draws a bar per resource in a terminal, full when its sweep has succeeded', () => {
    const out = stream(true)
    const progress = createRunProgress(out)
    progress.show(
      run([
        sweep('crm.people', { status: 'running', records: 600, remote_count: 1200 }),
        sweep('reservations.contacts', { status: 'running', records: 300 }),
        sweep('crm.deals', { status: 'succeeded', records: 35, remote_count: 1200 }),
      ]),
    )
    progress.stop()
    const text = out.text()
    expect(text).toContain(
      `crm.people             ${'█'.repeat(12)}${'░'.repeat(12)}  50%  running, 600 of 1,200`,
    )
    // no remote count: no percentage to claim
    expect(text).toContain(`reservations.contacts  ${'░'.repeat(24)}    ?  running, 300 records`)
    // an incremental sweep reads what changed: done is complete
    expect(text).toContain(`crm.deals              ${'█'.repeat(24)} 100%  succeeded, 35 of 1,200`)
  })

  it('draws a failed sweep as failed: how far it got, and why, not a full bar', () => {
    const out = stream(true)
    const progress = createRunProgress(out)
    progress.show(
      run([
        sweep('crm.people', {
          status: 'failed',
          records: 300,
          pages: 12,
          remote_count: 1200,
          error: 'crm GET /api/people: server error 500',
        }),
        sweep('crm.tasks', { status: 'failed', error: 'crm GET /api/tasks: not authorized (401)' }),
      ]),
    )
    progress.stop()
    const text = out.text()
    expect(text).toContain(
      `crm.people  ${'█'.repeat(6)}${'░'.repeat(18)}    ✗  failed after 12 pages, 300 of 1,200 records: ` +
        'crm GET /api/people: server error 500',
    )
    expect(text).toContain(
      `crm.tasks   ${'░'.repeat(24)}    ✗  failed before its first page, 0 records: crm GET /api/tasks: ` +
        'not authorized (401)',
    )
    expect(text).not.toContain('100%')
  })

  it('says failed, and after how many pages, in a plain line', () => {
    const out = stream(false)
    const progress = createRunProgress(out)
    progress.show(run([sweep('crm.people', { status: 'failed', records: 1, pages: 1, error: 'HTTP 500' })]))
    expect(out.text()).toBe('crm.people: failed after 1 page, 1 record: HTTP 500\n')
  })

  it('shows beside its bar that a sweep waits for the rate limit, and in a plain line once it has waited', () => {
    const waits = new Map([['crm.people', "waiting for the CRM's rate limit"]])
    const running = sweep('crm.people', { status: 'running', records: 250, remote_count: 1000 })
    const tty = stream(true)
    const bars = createRunProgress(tty)
    bars.show(run([running]), waits)
    bars.stop()
    expect(tty.text()).toContain(
      `crm.people  ${'█'.repeat(6)}${'░'.repeat(18)}  25%  running, 250 of 1,000 records, waiting for the CRM's rate limit`,
    )

    const out = stream(false)
    let now = 0
    const plain = createRunProgress(out, { now: () => now })
    plain.show(run([running]))
    now = 1000
    plain.show(run([running]), waits) // not every flicker of the budget: at most a line every 5 s
    now = 6000
    plain.show(run([running]), waits)
    expect(out.text().trim().split('\n')).toEqual([
      'crm.people: running, 250 of 1,000 records',
      "crm.people: running, 250 of 1,000 records, waiting for the CRM's rate limit",
    ])
  })
})

describe('log lines while the bars of resync --wait are drawn', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('go above the bars, one line each, and below them once they are done', () => {
    vi.useFakeTimers() // cli-progress redraws on a timer: each advance is one frame
    const tty = terminalStream(200)
    const logs = createLogOutput(tty, { debug: false, time: false })
    const logger = createLogger({ level: 'info', destination: logs })
    const progress = createRunProgress(tty, { logs })
    const sweeps = (records: number) => [
      sweep('crm.people', { status: 'running', records, remote_count: 1000 }),
      sweep('crm.tasks', { status: 'running', records }),
    ]
    progress.show(run(sweeps(250)))
    vi.advanceTimersByTime(250)
    const error = Object.assign(new Error('crm GET /api/people: server error 500'), { client: { huge: 'x' } })
    logger.warn({ err: error, resource: 'crm.people', runId: 7 }, 'upstream request failed; retrying')
    vi.advanceTimersByTime(250)
    logger.warn('a second line')
    progress.show(run(sweeps(500)))
    vi.advanceTimersByTime(250)
    progress.stop()
    logger.info('after the bars')
    expect(tty.screen()).toEqual([
      'warn: crm.people (run 7): upstream request failed; retrying: crm GET /api/people: server error 500',
      'warn: a second line',
      `crm.people  ${'█'.repeat(12)}${'░'.repeat(12)}  50%  running, 500 of 1,000 records`,
      `crm.tasks   ${'░'.repeat(24)}    ?  running, 500 records`,
      'info: after the bars',
    ])
  })

  it('are cut to the width of the terminal, whose wrapping the bars turn off', () => {
    vi.useFakeTimers()
    const tty = terminalStream(40)
    const logs = createLogOutput(tty, { debug: false, time: false })
    const progress = createRunProgress(tty, { logs })
    progress.show(run([sweep('crm.people', { status: 'running' })]))
    vi.advanceTimersByTime(250)
    const long = `warn: ${'word '.repeat(20).trim()}`
    logs.write(JSON.stringify({ level: 40, msg: 'word '.repeat(20).trim() }))
    progress.stop()
    const rows = tty.screen()
    const logged = rows.slice(0, Math.ceil(long.length / 40))
    expect(logged.every((row) => row.length <= 40)).toBe(true)
    expect(logged.join('')).toBe(long.replace(/ +$/, ''))
    expect(rows.at(-1)).toMatch(/^crm\.people {2}░+/)
  })
})

describe('runSummary', () => {
  it('states the outcome and a row per resource, with the errors spelled out', () => {
    const text = runSummary(
      run(
        [
          sweep('crm.people', {
            status: 'succeeded',
            records: 1200,
            remote_count: 1200,
            pages: 3,
            api_requests: 5,
            started_at: new Date('2025-01-01T10:00:00Z'),
            finished_at: new Date('2025-01-01T10:00:09Z'),
          }),
          sweep('crm.deals', { status: 'failed', error: 'the CRM answered 500 four times' }),
        ],
        { status: 'failed', finished_at: new Date('2025-01-01T10:00:10Z') },
      ),
    )
    expect(text).toContain('run 7 (full) failed in 10 s')
    expect(text).toMatch(/crm\.people\s+succeeded\s+1,200\s+1,200\s+3\s+5\s+0\s+0\s+9 s/)
    expect(text).toContain('crm.deals: the CRM answered 500 four times')
  })
})
