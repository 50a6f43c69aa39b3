// The plan of a sweep (src/sync/plan/sweep.ts): what it reads, and whether it takes the count, from one
// read of the state. One row a decision.
import { describe, expect, it } from 'vitest'
import { users } from '../../src/resources/crm.ts'
import { activities, bookings, people, tasks } from '../../src/resources/index.ts'
import { countDue, planSweep, type SweepFacts } from '../../src/sync/plan/sweep.ts'

const now = new Date('2026-11-27T12:00:00Z')
const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000)

// At a 300 s interval, a verification is due every 600 s (the cost here is far below the budget).
const base: SweepFacts = {
  resource: people,
  mode: 'incremental',
  resumed: false,
  state: {
    watermark: ago(6),
    lastRemoteCount: 100,
    lastRemoteCountAt: ago(1),
    lastVerifiedAt: ago(1),
    largestPage: 250,
  },
  liveRows: 100,
  serviceCost: 20,
  verification: {
    intervalSeconds: 300,
    budgetShare: 0.5,
    upstreams: {
      crm: { requestsPerSecond: 5, pageSize: 250 },
      reservation: { requestsPerSecond: 5, pageSize: 250 },
    },
  },
  feed: { pollSeconds: 0, coveredSince: null, polledAt: null },
  deliveredSinceCount: false,
  now,
}

type Patch = Partial<Omit<SweepFacts, 'state' | 'feed'>> & {
  state?: Partial<SweepFacts['state']>
  feed?: Partial<SweepFacts['feed']>
}
const facts = (patch: Patch): SweepFacts => ({
  ...base,
  ...patch,
  state: { ...base.state, ...patch.state },
  feed: { ...base.feed, ...patch.feed },
})
const answering = { pollSeconds: 2, coveredSince: ago(30), polledAt: new Date(now.getTime() - 1000) }
/** The feed answering, and writing every entry of the log it read, up to entry 7000, since 30 min ago. */
const writing = { ...answering, logWrittenSince: ago(30), newestId: 7_000 }

describe('planSweep', () => {
  it.each<[string, Patch, ReturnType<typeof planSweep>]>([
    ['a full sweep: every page', { mode: 'full' }, { read: 'everything', onePage: false }],
    [
      'counted resource, feed off: its newest pages',
      {},
      { read: 'newest', watermark: ago(6), onePage: false },
    ],
    [
      'counted resource, the feed answers: nothing',
      { feed: answering },
      { read: 'nothing', onePage: false, reason: 'the feed answers' },
    ],
    [
      'the feed answers but a count is due: its newest pages',
      { feed: answering, state: { lastRemoteCountAt: ago(20), lastVerifiedAt: ago(20) } },
      { read: 'newest', watermark: ago(6), onePage: false },
    ],
    [
      'the feed missed two polls: its newest pages',
      { feed: { ...answering, polledAt: ago(1) } },
      { read: 'newest', watermark: ago(6), onePage: false },
    ],
    [
      'the feed had a gap after the watermark: its newest pages',
      { feed: { ...answering, coveredSince: ago(3) } },
      { read: 'newest', watermark: ago(6), onePage: false },
    ],
    [
      'walk-verified, verification due: every page',
      { resource: tasks, state: { lastVerifiedAt: ago(20) }, liveRows: 1000 },
      { read: 'everything', onePage: false },
    ],
    [
      'walk-verified, not due, the feed answers: nothing',
      { resource: tasks, liveRows: 1000, feed: answering },
      { read: 'nothing', onePage: false, reason: 'the feed answers' },
    ],
    [
      'no updated_at, one page holds it: that page',
      { resource: users, liveRows: 3, state: { largestPage: 10 } },
      { read: 'first-page', onePage: true },
    ],
    [
      'no updated_at, more than a page, not due: nothing',
      { resource: users, liveRows: 300 },
      { read: 'nothing', onePage: false, reason: 'verification not due' },
    ],
    [
      'walk-verified list on one page: newest pages, watching the page for deletions',
      { resource: bookings, liveRows: 100 },
      { read: 'newest', watermark: ago(6), onePage: true },
    ],
    [
      'walk-verified, never verified: every page',
      { resource: bookings, state: { lastVerifiedAt: null } },
      { read: 'everything', onePage: true },
    ],
    [
      'the log, the feed writing it: its newest pages, stopping at a page held whole within what it read',
      { resource: activities, feed: writing },
      { read: 'newest', watermark: ago(6), onePage: false, feedReadTo: 7_000 },
    ],
    [
      'the log, feed off: its newest pages down to the watermark',
      { resource: activities },
      { read: 'newest', watermark: ago(6), onePage: false },
    ],
    [
      'the log, the feed reading it but not writing it: down to the watermark',
      { resource: activities, feed: { ...writing, logWrittenSince: null } },
      { read: 'newest', watermark: ago(6), onePage: false },
    ],
    [
      'the log, written since after the watermark (a gap, the first poll): down to the watermark',
      { resource: activities, feed: { ...writing, logWrittenSince: ago(3) } },
      { read: 'newest', watermark: ago(6), onePage: false },
    ],
    [
      'the log, the feed missed two polls: down to the watermark',
      { resource: activities, feed: { ...writing, polledAt: ago(1) } },
      { read: 'newest', watermark: ago(6), onePage: false },
    ],
    [
      'no watermark yet: from the first page to the end',
      { state: { watermark: null }, feed: answering },
      { read: 'newest', watermark: null, onePage: false },
    ],
  ])('%s', (_name, patch, plan) => {
    expect(planSweep(facts(patch))).toEqual(plan)
  })
})

describe('countDue after a walk that stopped at its watermark', () => {
  it.each<[string, Patch, number, boolean]>([
    ['nothing changed, counted a minute ago', {}, 0, false],
    ['the walk saw newer records', {}, 3, true],
    ['the sweep resumed', { resumed: true }, 0, true],
    ['a walk tombstoned rows after the count', { liveRows: 99 }, 0, true],
    ['deliveries came since the count', { deliveredSinceCount: true }, 0, true],
    [
      'counted twenty minutes ago',
      { state: { lastRemoteCountAt: ago(20), lastVerifiedAt: ago(20) } },
      0,
      true,
    ],
  ])('%s: %s', (_name, patch, newer, due) => {
    expect(countDue(facts(patch), { newer })).toBe(due)
  })
})
