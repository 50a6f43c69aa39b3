// Plain text tables for the terminal: columns padded to their widest cell, numbers aligned right.
export interface Column {
  header: string
  align?: 'left' | 'right'
}

export function formatTable(columns: Column[], rows: string[][]): string {
  const widths = columns.map((column, index) =>
    Math.max(column.header.length, ...rows.map((row) => (row[index] ?? '').length)),
  )
  const line = (cells: string[]) =>
    cells
      .map((cell, index) =>
        columns[index]?.align === 'right'
          ? cell.padStart(widths[index] ?? 0)
          : cell.padEnd(widths[index] ?? 0),
      )
      .join('  ')
      .trimEnd()
  return [line(columns.map((column) => column.header)), ...rows.map(line)].join('\n')
}
