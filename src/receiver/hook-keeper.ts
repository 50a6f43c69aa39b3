// Registers the hooks at start and keeps trying, with backoff, while the CRM cannot be reached;
// /readyz reports the outcome.
import type { Logger } from '../log.ts'
import type { Db } from '../store/database.ts'
import { type HookSettings, type HooksApi, registerHooks } from './registration.ts'

export type HookStatus =
  | { state: 'off'; reason: string }
  | { state: 'registering'; attempts: number; last_error?: string }
  | { state: 'registered'; at: string; created: number; deleted: number; kept: number }

export interface HookKeeper {
  status(): HookStatus
  stop(): void
}

const MAX_DELAY_MS = 5 * 60_000

export function keepHooksRegistered(
  db: Db,
  api: HooksApi,
  settings: HookSettings,
  logger: Logger,
): HookKeeper {
  let status: HookStatus = { state: 'registering', attempts: 0 }
  let timer: NodeJS.Timeout | undefined
  let stopped = false

  const attempt = async (attempts: number) => {
    try {
      const result = await registerHooks(db, api, settings)
      status = {
        state: 'registered',
        at: new Date().toISOString(),
        created: result.created.length,
        deleted: result.deleted.length,
        kept: result.kept.length,
      }
      logger.info({ ...status, foreign: result.foreign.length }, 'hooks registered')
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      status = { state: 'registering', attempts, last_error: message }
      const delay = Math.min(MAX_DELAY_MS, 1000 * 2 ** Math.min(attempts, 10))
      logger.warn({ err: error, attempts, retryInMs: delay }, 'hook registration failed; retrying')
      if (!stopped) timer = setTimeout(() => void attempt(attempts + 1), delay).unref()
    }
  }
  void attempt(1)

  return {
    status: () => status,
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}
