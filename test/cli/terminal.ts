// A terminal for tests of what the commands draw: a stream that says it is a TTY and records what is
// written, and `screen()`, what a terminal would show after it: the text with the cursor movements and
// erasures cli-progress and readline write (CSI A B C D G H K J) carried out, line wrapping off.

export function terminalStream(columns = 200) {
  const written: string[] = []
  return {
    isTTY: true as const,
    columns,
    written,
    write(text: string) {
      written.push(text)
      return true
    },
    text: () => written.join(''),
    screen: () => screen(written.join('')),
  }
}

/** The rows a terminal shows after `output`, trailing blanks and empty last rows left out. */
export function screen(output: string): string[] {
  const rows: string[][] = [[]]
  let row = 0
  let column = 0
  const line = () => {
    while (rows.length <= row) rows.push([])
    return rows[row] as string[]
  }
  for (let at = 0; at < output.length; at += 1) {
    const char = output[at] as string
    if (char === '\u001b') {
      const match = /^\[(\??)([\d;]*)([A-Za-z])/.exec(output.slice(at + 1))
      if (!match) continue
      at += match[0].length
      const [, privateMode, params = '', command] = match
      if (privateMode) continue // cursor shown or hidden, line wrapping on or off
      const [first, second] = params.split(';').map((value) => (value === '' ? undefined : Number(value)))
      const n = first ?? 1
      if (command === 'A') row = Math.max(0, row - n)
      else if (command === 'B') row += n
      else if (command === 'C') column += n
      else if (command === 'D') column = Math.max(0, column - n)
      else if (command === 'G') column = n - 1
      else if (command === 'H') {
        row = (first ?? 1) - 1
        column = (second ?? 1) - 1
      } else if (command === 'K') {
        const cells = line()
        if ((first ?? 0) === 0) cells.splice(column)
        else if (first === 1) for (let i = 0; i <= column && i < cells.length; i += 1) cells[i] = ' '
        else cells.splice(0)
      } else if (command === 'J') {
        line().splice(column)
        rows.splice(row + 1)
      }
    } else if (char === '\n') {
      row += 1
      column = 0 // the terminal's output processing turns LF into CR LF
      line()
    } else if (char === '\r') column = 0
    else {
      const cells = line()
      while (cells.length < column) cells.push(' ')
      cells[column] = char
      column += 1
    }
  }
  const shown = rows.map((cells) => cells.join('').trimEnd())
  while (shown.length > 0 && shown.at(-1) === '') shown.pop()
  return shown
}
