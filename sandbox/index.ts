// The sandbox: a simulator of the CRM and the reservation service, with fault injection and a
// control API. Used by the test suite, the benchmarks and `crm-sync sandbox`; see README.md.

export { type ManualClock, manualClock } from './clock.ts'
export { runSandboxCommand } from './command.ts'
export {
  type CrmCollection,
  type ReservationCollection,
  type SandboxControl,
  SandboxError,
} from './control.ts'
export type { BehaviourPatch, Counters, FaultsPatch } from './faults.ts'
export { type Sandbox, type SandboxOptions, startSandbox } from './sandbox.ts'
export type { SeedCount } from './seed.ts'
