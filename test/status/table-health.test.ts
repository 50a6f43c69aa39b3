// A table's state on the status page (src/status/table-health.ts): one row a decision.
import { describe, expect, it } from 'vitest'
import type { ResourceStatus } from '../../src/status/engine-status.ts'
import { accountHealth, tableHealth, worseAccountFirst, worseFirst } from '../../src/status/table-health.ts'

const now = new Date('2026-11-27T12:00:00Z')
const secondsAgo = (seconds: number) => new Date(now.getTime() - seconds * 1000).toISOString()
const base: ResourceStatus = {
  resource: 'crm.people',
  live_rows: 10,
  remote_count: 10,
  remote_count_at: null,
  drift: 0,
  watermark: null,
  last_incremental_sync_at: null,
  last_full_sync_at: null,
  last_run: null,
  active_sweep: null,
  waiting_runs: [],
}
const succeeded = {
  id: 1,
  mode: 'incremental' as const,
  status: 'succeeded' as const,
  finished_at: null,
  error: null,
}
const running = {
  run_id: 2,
  status: 'running' as const,
  records: 0,
  pages: 0,
  remote_count: null,
  started_at: null,
  progress_at: secondsAgo(1),
}

// INCREMENTAL_SYNC_INTERVAL 300 s, 60 s of slack.
describe('tableHealth', () => {
  it.each<{ why: string; status: Partial<ResourceStatus>; state: string }>([
    {
      why: 'swept a minute ago',
      status: { last_incremental_sync_at: secondsAgo(60), last_run: succeeded },
      state: 'on time',
    },
    {
      why: 'swept one interval and the slack ago',
      status: { last_incremental_sync_at: secondsAgo(360) },
      state: 'on time',
    },
    {
      why: 'past one interval and the slack',
      status: { last_incremental_sync_at: secondsAgo(361) },
      state: 'late',
    },
    {
      why: 'past two intervals and the slack',
      status: { last_incremental_sync_at: secondsAgo(661) },
      state: 'error',
    },
    {
      why: 'an old incremental but a recent full sweep',
      status: { last_incremental_sync_at: secondsAgo(5000), last_full_sync_at: secondsAgo(30) },
      state: 'on time',
    },
    {
      why: 'its last sweep failed, however recent the one before',
      status: {
        last_incremental_sync_at: secondsAgo(10),
        last_run: { ...succeeded, status: 'failed', error: 'crm GET /api/people: server error 500' },
      },
      state: 'error',
    },
    { why: 'never swept, the first sync under way', status: { active_sweep: running }, state: 'late' },
    { why: 'never swept, nothing under way', status: {}, state: 'error' },
  ])('$why: $state', ({ status, state }) => {
    expect(tableHealth({ ...base, ...status }, now, 300).state).toBe(state)
  })

  it('names the failed run’s error as the reason', () => {
    const failed = { ...succeeded, status: 'failed' as const, error: 'rate limited (429)' }
    expect(tableHealth({ ...base, last_run: failed }, now, 300).reason).toMatch(/rate limited \(429\)/)
  })

  it('allows a short interval no more slack than the interval', () => {
    const swept = { ...base, last_incremental_sync_at: secondsAgo(21) }
    expect(tableHealth(swept, now, 10).state).toBe('late')
    expect(tableHealth(swept, now, 11).state).toBe('on time')
  })

  it('orders the worst first', () => {
    const states = ['on time', 'error', 'late', 'on time', 'error'] as const
    expect([...states].sort(worseFirst)).toEqual(['error', 'error', 'late', 'on time', 'on time'])
  })
})

describe('accountHealth', () => {
  const onTime = { ...base, last_incremental_sync_at: secondsAgo(60), last_run: succeeded }
  const late = { ...base, last_incremental_sync_at: secondsAgo(400) }
  const failed = { ...base, last_run: { ...succeeded, status: 'failed' as const, error: 'boom' } }

  it('is its worst table’s state, with how many tables are in error and late', () => {
    expect(accountHealth([onTime, late, failed, late], now, 300)).toEqual({
      state: 'error',
      errors: 1,
      late: 2,
    })
    expect(accountHealth([onTime, late], now, 300)).toEqual({ state: 'late', errors: 0, late: 1 })
    expect(accountHealth([], now, 300)).toEqual({ state: 'on time', errors: 0, late: 0 })
  })

  it('puts the worse account first: its state, then more tables in error, then more late', () => {
    const accounts = [
      { name: 'calm', health: accountHealth([onTime], now, 300) },
      { name: 'late', health: accountHealth([late, onTime], now, 300) },
      { name: 'one error', health: accountHealth([failed, onTime], now, 300) },
      { name: 'two errors', health: accountHealth([failed, failed], now, 300) },
      { name: 'one error, late', health: accountHealth([failed, late], now, 300) },
    ]
    expect(accounts.sort((a, b) => worseAccountFirst(a.health, b.health)).map((a) => a.name)).toEqual([
      'two errors',
      'one error, late',
      'one error',
      'late',
      'calm',
    ])
  })
})
