// The sandbox: a simulator of the CRM and the reservation service, with fault injection and a
// control API. Used by the test suite, the benchmarks and `crm-sync sandbox`; see README.md.

export { type Clock, type ManualClock, manualClock, systemClock } from './clock.ts'
export { runSandboxCommand, type SandboxCommandIo } from './command.ts'
export {
  type CrmCollection,
  type ReservationCollection,
  type SandboxControl,
  SandboxError,
  type SandboxRecord,
} from './control.ts'
export type { Behaviour, BehaviourPatch, Counters, Faults, FaultsPatch } from './faults.ts'
export { type Sandbox, type SandboxOptions, startSandbox } from './sandbox.ts'
export type { SeedCount, SeededResource } from './seed.ts'
