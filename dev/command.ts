import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { text } from 'node:stream/consumers'

/**
 * What the development tools (render, new-fixture, new-controller, generate, check) share: a tool is a function of
 * its arguments and of this I/O, which its entry point in scripts/ binds to the process, and a test to what it
 * checks, in-process.
 */

export interface CommandIo {
  /** Where relative paths start: the working directory of the command. */
  cwd: string
  /** Standard input, whole: for a path given as `-`. */
  stdin: () => Promise<string>
  stdout: (text: string) => void
}

/** A package's command-line program, by its path in the package (the packages' `exports` leave it out). */
export function packageProgram (name: string, path: string): string {
  return join(dirname(createRequire(import.meta.url).resolve(`${name}/package.json`)), path)
}

/** A mistake of the person running the command, said in one line: the entry point prints it and exits 1. */
export class CommandError extends Error {}

/** A file's text (`-`: standard input), or a CommandError naming it. */
export async function readInput (io: CommandIo, path: string): Promise<string> {
  return await (path === '-' ? io.stdin() : readFile(resolve(io.cwd, path), 'utf8')).catch((error: NodeJS.ErrnoException) => {
    throw new CommandError(`cannot read ${path}: ${error.code ?? error.message}`)
  })
}

/**
 * Runs a tool as a command: a CommandError is one line on stderr and exit code 1, anything else a bug with its stack.
 * Output into a pipe that closed (`npm run render -- … | head -3`) ends the command quietly, as it ends `cat`.
 */
export async function runCommand (tool: (io: CommandIo) => Promise<void>): Promise<void> {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error
    process.exit(0)
  })
  try {
    await tool({ cwd: process.cwd(), stdin: async () => await text(process.stdin), stdout: (output) => { process.stdout.write(output) } })
  } catch (error) {
    if (!(error instanceof CommandError)) throw error
    process.stderr.write(`${error.message}\n`)
    process.exitCode = 1
  }
}
