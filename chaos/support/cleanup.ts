// Everything the suite starts is undone on every way out: the end of a scenario, a failed assertion,
// an exception, Ctrl-C or SIGTERM. A scope collects undo steps (stop a proxy, drop a database) and
// runs them last-in first-out; the engines' process groups are also killed synchronously on `exit`,
// the one step that still runs when the event loop no longer does.

type Step = () => unknown

export interface Scope {
  /** Runs `step` when the scope closes (last deferred, first run). */
  defer(step: Step): void
  /** Runs every deferred step once, each one even if another failed. */
  close(): Promise<void>
}

const openScopes = new Set<Scope>()
/** Process groups (engines) started by the suite and not yet seen to exit. */
const groups = new Set<number>()

export function createScope(): Scope {
  const steps: Step[] = []
  let closing: Promise<void> | undefined
  const scope: Scope = {
    defer(step) {
      steps.push(step)
    },
    close() {
      closing ??= (async () => {
        while (steps.length > 0) {
          const step = steps.pop() as Step
          try {
            await step()
          } catch (error) {
            console.error(`cleanup step failed: ${error instanceof Error ? error.message : String(error)}`)
          }
        }
        openScopes.delete(scope)
      })()
      return closing
    },
  }
  openScopes.add(scope)
  return scope
}

/** A process group the suite started (its leader's pid): killed with SIGKILL on any exit. */
export function trackGroup(pid: number): void {
  groups.add(pid)
}

export function untrackGroup(pid: number): void {
  groups.delete(pid)
}

/** SIGKILL to one tracked process group; false when it was gone already. */
export function killGroup(pid: number): boolean {
  try {
    process.kill(-pid, 'SIGKILL')
    return true
  } catch {
    return false
  }
}

function killTrackedGroups(): void {
  for (const pid of groups) killGroup(pid)
  groups.clear()
}

async function closeEverything(): Promise<void> {
  killTrackedGroups()
  // The newest first: a scenario's scope (its databases) before the suite's (the server they are on).
  for (const scope of [...openScopes].reverse()) await scope.close()
}

let leaving = false

/** Whether the suite is on its way out (Ctrl-C, SIGTERM, an uncaught error): start nothing new. */
export function isLeaving(): boolean {
  return leaving
}

/** Ctrl-C, SIGTERM, an uncaught error: clean up, then exit (130 for a signal, 1 for an error). */
export function installExitHandlers(): void {
  const leave = (code: number, why: string) => {
    if (leaving) return
    leaving = true
    console.error(`\nchaos: ${why}; stopping engines and dropping scratch databases...`)
    const forced = setTimeout(() => process.exit(code), 20_000)
    forced.unref()
    void closeEverything().finally(() => process.exit(code))
  }
  process.on('SIGINT', () => leave(130, 'interrupted'))
  process.on('SIGTERM', () => leave(143, 'terminated'))
  process.on('uncaughtException', (error) => {
    console.error(error)
    leave(1, 'uncaught exception')
  })
  process.on('unhandledRejection', (error) => {
    console.error(error)
    leave(1, 'unhandled rejection')
  })
  process.on('exit', killTrackedGroups)
}
