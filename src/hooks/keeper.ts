// Keeps crm-sync's hooks registered: registers them at start, retrying with backoff while the CRM
// cannot be reached, and then, every HOOKS_CHECK_INTERVAL, checks them and re-registers those deleted,
// disabled or changed in the CRM (one hooks index request per check when all is well). /readyz reports
// the outcome of both.
import type { Logger } from '../log.ts'
import type { Db } from '../store/database.ts'
import type { JobQueue } from '../sync/job-queue.ts'
import { type HookCheckSchedule, scheduleHookChecks } from './checks.ts'
import {
  type HookSettings,
  type HooksApi,
  type RegistrationResult,
  type ReregistrationReason,
  registerHooks,
  reregistrationReasons,
} from './registration.ts'

/** `ok`: every hook in place; `repaired`: some re-registered (or stale ones removed); `failed`. */
export type HookCheckOutcome = 'ok' | 'repaired' | 'failed'

/** Told about the periodic checks (the metrics). */
export interface HookObserver {
  hookChecked(outcome: HookCheckOutcome): void
  hooksReregistered(reason: ReregistrationReason, count: number): void
}

export interface HookCheckReport {
  at: string
  outcome: HookCheckOutcome
  reregistered?: Record<ReregistrationReason, number>
  error?: string
}

export type HookStatus =
  | { state: 'off'; reason: string }
  | { state: 'registering'; attempts: number; last_error?: string }
  // `at`: when the hooks were last seen complete (or made so), by the registration or a check.
  | {
      state: 'registered'
      at: string
      created: number
      deleted: number
      kept: number
      last_check?: HookCheckReport
    }
  // The last check of this process could not read or repair the hooks; the next one tries again.
  | { state: 'check_failed'; registered_at: string; last_check: HookCheckReport }

export interface HookKeeper {
  status(): HookStatus
  /** Runs one check now (what a scheduled check runs). */
  check(): Promise<void>
  stop(): void
}

export interface HookKeeperOptions {
  /** Periodic checks; without them (or with 0 s) the hooks are registered at start only. */
  checks?: { boss: JobQueue; intervalSeconds: number }
  observer?: HookObserver
}

const MAX_DELAY_MS = 5 * 60_000

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

function registered(result: RegistrationResult, at: string, check?: HookCheckReport): HookStatus {
  return {
    state: 'registered',
    at,
    created: result.created.length,
    deleted: result.deleted.length,
    kept: result.kept.length,
    ...(check ? { last_check: check } : {}),
  }
}

/** The status after a failed check: a start registration still retrying keeps its own. */
function checkFailed(status: HookStatus, report: HookCheckReport): HookStatus {
  if (status.state === 'registered')
    return { state: 'check_failed', registered_at: status.at, last_check: report }
  if (status.state === 'check_failed') return { ...status, last_check: report }
  return status
}

export function keepHooksRegistered(
  db: Db,
  api: HooksApi,
  settings: HookSettings,
  logger: Logger,
  options: HookKeeperOptions = {},
): HookKeeper {
  const { observer } = options
  let status: HookStatus = { state: 'registering', attempts: 0 }
  let timer: NodeJS.Timeout | undefined
  let stopped = false

  const attempt = async (attempts: number) => {
    try {
      const result = await registerHooks(db, api, settings)
      status = registered(result, new Date().toISOString())
      logger.info({ ...status, foreign: result.foreign.length }, 'hooks registered')
    } catch (error) {
      status = { state: 'registering', attempts, last_error: messageOf(error) }
      const delay = Math.min(MAX_DELAY_MS, 1000 * 2 ** Math.min(attempts, 10))
      logger.warn({ err: error, attempts, retryInMs: delay }, 'hook registration failed; retrying')
      if (!stopped) timer = setTimeout(() => void attempt(attempts + 1), delay).unref()
    }
  }

  const check = async () => {
    if (stopped) return
    const at = new Date().toISOString()
    try {
      const result = await registerHooks(db, api, settings)
      const reasons = reregistrationReasons(result)
      const repaired = result.created.length + result.deleted.length > 0
      const report: HookCheckReport = repaired
        ? { at, outcome: 'repaired', reregistered: reasons }
        : { at, outcome: 'ok' }
      observer?.hookChecked(report.outcome)
      for (const [reason, count] of Object.entries(reasons) as [ReregistrationReason, number][]) {
        if (count > 0) observer?.hooksReregistered(reason, count)
      }
      // A registration at start that is still retrying has nothing left to do.
      clearTimeout(timer)
      status = registered(result, at, report)
      if (repaired) {
        logger.warn(
          { reregistered: reasons, deleted: result.deleted.length },
          'hooks were missing, disabled or changed in the CRM; re-registered',
        )
      } else logger.debug('hooks checked: all in place')
    } catch (error) {
      observer?.hookChecked('failed')
      status = checkFailed(status, { at, outcome: 'failed', error: messageOf(error) })
      logger.warn({ err: error }, 'hook check failed; the next check tries again')
    }
  }

  void attempt(1)
  const interval = options.checks?.intervalSeconds ?? 0
  const schedule: Promise<HookCheckSchedule | undefined> =
    options.checks && interval > 0
      ? scheduleHookChecks(options.checks.boss, interval, check, logger).catch((error: unknown) => {
          logger.error(
            { err: error },
            'could not schedule the hook checks; hooks are registered at start only',
          )
          return undefined
        })
      : Promise.resolve(undefined)

  return {
    status: () => status,
    check,
    stop() {
      stopped = true
      clearTimeout(timer)
      void schedule.then((scheduled) => scheduled?.stop())
    },
  }
}
