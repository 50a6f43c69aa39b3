// `node src/main.ts [options]`: the same as `crm-sync start`, through the CLI. The service itself is
// composed in service.ts, which the CLI's start command imports.
if (import.meta.main) {
  const { run } = await import('./cli/main.ts')
  process.exitCode = await run(['start', ...process.argv.slice(2)])
}
