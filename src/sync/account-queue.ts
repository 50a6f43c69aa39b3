// An account's queues in the job queue every account shares (docs/accounts.md): the account `north`
// has `north/record-refresh`, `north/resource-sweep`, ... and `north/dead-letter`, so that its jobs,
// schedules and policies are its own, while one pg-boss (one pool, one supervisor) serves them all. The
// code names queues as QUEUES does; the queue of an account renames them on the way in. The one
// account of a deployment without ACCOUNTS_FILE keeps the names as they are.
import type { PgBoss } from 'pg-boss'

type JobQueue = PgBoss

// pg-boss's methods whose first argument is a queue's name.
const NAMED = new Set([
  'send',
  'sendAfter',
  'sendThrottled',
  'sendDebounced',
  'insert',
  'fetch',
  'work',
  'offWork',
  'schedule',
  'unschedule',
  'getSchedules',
  'createQueue',
  'updateQueue',
  'deleteQueue',
  'getQueue',
  'getQueueStats',
  'getJobById',
  'findJobs',
  'complete',
  'fail',
  'cancel',
  'resume',
  'retry',
  'deleteJob',
])

/** `record-refresh` of the account `north`: `north/record-refresh`. */
export const accountQueueName = (account: string, queue: string): string => `${account}/${queue}`

/** The job queue as the account `account` sees it (null: the queue itself). */
export function accountQueue(boss: JobQueue, account: string | null): JobQueue {
  if (account === null) return boss
  const rename = (name: unknown) => (typeof name === 'string' ? accountQueueName(account, name) : name)
  return new Proxy(boss, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver)
      if (typeof value !== 'function') return value
      if (typeof key !== 'string' || !NAMED.has(key)) return value.bind(target)
      return (name: unknown, ...rest: unknown[]) => {
        // A queue's dead letters go to the account's dead-letter queue.
        if ((key === 'createQueue' || key === 'updateQueue') && rest[0] && typeof rest[0] === 'object') {
          const options = rest[0] as { deadLetter?: string }
          if (options.deadLetter) rest[0] = { ...options, deadLetter: rename(options.deadLetter) }
        }
        return value.call(target, rename(name), ...rest)
      }
    },
  })
}
