// Scenario parts that run in a process of their own (an engine, a receiver), so that their CPU and
// memory are theirs alone: started with their options as one JSON argument, they say when they are
// ready over IPC and stop when asked.
import { type ChildProcess, spawn } from 'node:child_process'
import { peakRssBytes, processCpuSeconds } from './stats.ts'

export interface Child<Ready> {
  pid: number
  ready: Ready
  /** Peak resident set size so far (VmHWM), bytes. */
  peakRss(): number
  /** CPU seconds used so far. */
  cpuSeconds(): number
  stop(): Promise<void>
}

type Message<Ready> = { type: 'ready'; ready: Ready } | { type: 'failed'; error: string }

/** `nodeOptions`: flags for the child's Node, e.g. `--max-old-space-size=192` or `--cpu-prof`. */
export async function spawnChild<Ready>(
  file: URL,
  options: unknown,
  nodeOptions: string[] = [],
): Promise<Child<Ready>> {
  const child: ChildProcess = spawn(
    process.execPath,
    [...nodeOptions, file.pathname, JSON.stringify(options)],
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  )
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`${file.pathname} exited with ${code} before it was ready`)),
    )
    child.on('message', (message: Message<Ready>) => {
      if (message.type === 'ready') resolve(message.ready)
      else reject(new Error(`${file.pathname} failed: ${message.error}`))
    })
  })
  const pid = child.pid as number
  let stopping: Promise<void> | undefined
  return {
    pid,
    ready,
    peakRss: () => peakRssBytes(pid),
    cpuSeconds: () => processCpuSeconds(pid),
    stop() {
      stopping ??= (async () => {
        if (child.exitCode !== null) return
        child.send({ type: 'stop' })
        const killer = setTimeout(() => child.kill('SIGKILL'), 30_000)
        await exited
        clearTimeout(killer)
      })()
      return stopping
    },
  }
}

/** In the child: its options, as the parent passed them. */
export function childOptions<T>(): T {
  return JSON.parse(process.argv[2] ?? '{}') as T
}

/** In the child: runs `start`, tells the parent what it returned, and calls `stop` when asked. */
export async function serveChild<Ready>(
  start: () => Promise<{ ready: Ready; stop: () => Promise<void> }>,
): Promise<void> {
  try {
    const { ready, stop } = await start()
    let stopping = false
    const stopAndExit = async () => {
      if (stopping) return
      stopping = true
      await stop()
      if (process.connected) process.disconnect()
      process.exit(0)
    }
    process.on('message', (message: { type?: string }) => {
      if (message.type === 'stop') void stopAndExit()
    })
    // The parent died (killed, crashed): nobody will ask this process to stop, so it stops itself
    // rather than go on sending requests to a sandbox that is gone.
    process.on('disconnect', () => void stopAndExit())
    process.send?.({ type: 'ready', ready })
  } catch (error) {
    process.send?.({
      type: 'failed',
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    })
    process.exit(1)
  }
}
