// The details pass of one process (./pass.ts), started with the freshness polls once the service
// listens: a person's historic events and assistants, read per person at DETAILS_BUDGET_PERCENT of the
// CRM's budget at most, paced and held back by ../plan/details.ts.
import type { CrmClient } from '../../api-client/index.ts'
import type { Config } from '../../config/index.ts'
import type { Logger } from '../../log.ts'
import { findResource, people } from '../../resources/index.ts'
import { freeBudgetShare } from '../../store/budget.ts'
import type { Db } from '../../store/database.ts'
import { detailMappings } from '../../store/record-details.ts'
import { inFirstSync } from '../../store/sync-state.ts'
import { startPolling } from '../feed/poll-loop.ts'
import { detailsPace, detailsWait } from '../plan/details.ts'
import { createDetailsPass, type DetailsPassDeps } from './pass.ts'

export interface DetailsPassStartDeps {
  db: Db
  crm: CrmClient
  config: Config
  logger: Logger
  onRead?: DetailsPassDeps['onRead']
}

/** Starts the pass, or returns null when it is off (DETAILS_BUDGET_PERCENT=0, or people not mirrored). */
export function startDetailsPass(deps: DetailsPassStartDeps): { stop(): Promise<void> } | null {
  const { db, config } = deps
  const share = config.detailsBudgetShare
  if (share <= 0 || !config.resources.includes(people.name)) return null
  const { requests, windowSeconds } = config.upstream.crm
  const pace = detailsPace(share, requests, windowSeconds, detailMappings(people).length)
  const crmResources = config.resources.filter((name) => findResource(name)?.service === 'crm')
  const logger = deps.logger.child({ task: 'details-pass', resource: people.name })
  const pass = createDetailsPass({
    db,
    crm: deps.crm,
    resource: people,
    batch: pace.batch,
    logger,
    onRead: deps.onRead,
  })
  return startPolling(pass, {
    name: 'details pass',
    pollSeconds: pace.periodSeconds,
    logger,
    yields: async () => {
      const [firstSync, freeShare] = await Promise.all([
        inFirstSync(db, crmResources),
        freeBudgetShare(db, 'crm'),
      ])
      return detailsWait({ share, firstSync, freeShare }) !== null
    },
  })
}
