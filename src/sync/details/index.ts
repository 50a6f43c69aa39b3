// The details pass of one process (./pass.ts), started with the freshness polls once the service
// listens: a person's historic events and assistants, read per person at DETAILS_BUDGET_PERCENT of the
// CRM's budget at most, paced and held back by ../plan/details.ts. It looks every TICK_SECONDS whether
// it may read: soon after a first sync or a 429's pause ends, and at most its share a window.
import type { CrmClient } from '../../api-client/index.ts'
import type { Config } from '../../config/index.ts'
import type { Logger } from '../../log.ts'
import { findResource, people } from '../../resources/index.ts'
import { freeBudgetShare } from '../../store/budget.ts'
import type { Db } from '../../store/database.ts'
import { inFirstSync } from '../../store/sync-state.ts'
import { startPolling } from '../feed/poll-loop.ts'
import { detailsWait } from '../plan/details.ts'
import { createDetailsPass, type DetailsPassDeps } from './pass.ts'

export interface DetailsPassStartDeps {
  db: Db
  crm: CrmClient
  config: Config
  logger: Logger
  onRead?: DetailsPassDeps['onRead']
}

const TICK_SECONDS = 2

/** Starts the pass, or returns null when it is off (DETAILS_BUDGET_PERCENT=0, or people not mirrored). */
export function startDetailsPass(deps: DetailsPassStartDeps): { stop(): Promise<void> } | null {
  const { db, config } = deps
  const share = config.detailsBudgetShare
  if (share <= 0 || !config.resources.includes(people.name)) return null
  const { requests, windowSeconds } = config.upstream.crm
  const crmResources = config.resources.filter((name) => findResource(name)?.service === 'crm')
  const logger = deps.logger.child({ task: 'details-pass', resource: people.name })
  const pass = createDetailsPass({
    db,
    crm: deps.crm,
    resource: people,
    share,
    requests,
    windowMs: windowSeconds * 1000,
    logger,
    onRead: deps.onRead,
  })
  const loop = startPolling(pass, {
    name: 'details pass',
    pollSeconds: TICK_SECONDS,
    logger,
    yields: async () => {
      const [firstSync, freeShare] = await Promise.all([
        inFirstSync(db, crmResources),
        freeBudgetShare(db, 'crm'),
      ])
      const wait = detailsWait({ share, firstSync, freeShare, ownShare: pass.ownShare() })
      if (wait) logger.debug({ wait, freeShare }, 'details pass waits')
      return wait !== null
    },
  })
  return {
    async stop() {
      pass.halt()
      await loop.stop()
    },
  }
}
