// What the commands print: tables, times, the progress of `resync --wait` (bars in a terminal, plain
// lines elsewhere) and the summary of a finished run. No database: runs are built by hand.
import { describe, expect, it } from 'vitest'
import { ago, count, duration, instant } from '../../src/cli/format.ts'
import { createRunProgress } from '../../src/cli/run-progress.ts'
import { runSummary } from '../../src/cli/run-summary.ts'
import { formatTable } from '../../src/cli/table.ts'
import type { RunView } from '../../src/store/runs.ts'

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
    const progress = createRunProgress(out, () => now)
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

  it('draws a bar per resource in a terminal, full when its sweep has finished', () => {
    const out = stream(true)
    const progress = createRunProgress(out)
    progress.show(
      run([
        sweep('crm.people', { status: 'running', records: 600, remote_count: 1200 }),
        sweep('reservations.contacts', { status: 'running', records: 300 }),
        sweep('crm.tasks', { status: 'failed', records: 10, error: 'HTTP 500' }),
      ]),
    )
    progress.stop()
    const text = out.text()
    expect(text).toContain(
      `crm.people             ${'█'.repeat(12)}${'░'.repeat(12)}  50%  running, 600 of 1,200`,
    )
    // no remote count: no percentage to claim
    expect(text).toContain(`reservations.contacts  ${'░'.repeat(24)}    ?  running, 300 records`)
    expect(text).toContain(`crm.tasks              ${'█'.repeat(24)} 100%  failed, 10 records: HTTP 500`)
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
