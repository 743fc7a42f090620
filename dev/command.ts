import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { text } from 'node:stream/consumers'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { DefinitionError } from '../hooks/framework/errors.js'

/**
 * What the commands of package.json share: one way to read their arguments (parseCommand), so that each answers
 * `--help` and nothing else, and refuses a flag it does not know in the same words; and for the development tools
 * (render, new-fixture, new-controller, generate, check), a function of its arguments and of this I/O, which its entry
 * point in scripts/ binds to the process, and a test to what it checks, in-process.
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

/**
 * A mistake of the person running the command, said in one line: the entry point prints it and exits 1, or 2 for a
 * mistake in how the command is called (a flag it does not know, an argument too many or missing).
 */
export class CommandError extends Error {
  constructor (message: string, readonly exitCode: 1 | 2 = 1) {
    super(message)
  }
}

/** What `--help` or `--version` asks for: the entry point prints it on stdout and exits 0, having done nothing else. */
export class CommandAnswer extends Error {}

/** A command's flags, as node:util's parseArgs takes them. */
type Options = NonNullable<ParseArgsConfig['options']>

export interface CommandSpec<O extends Options> {
  /** Its first line `usage: npm run <name> -- …`, then what the command does, for `--help`. */
  usage: string
  options: O
  /** How many arguments besides the flags it takes: [fewest, most]. */
  positionals?: [number, number]
  /** Whether `--version` prints the version. */
  version?: boolean
}

export interface ParsedCommand<O extends Options> {
  values: ReturnType<typeof parseArgs<{ options: O, allowPositionals: true }>>['values']
  positionals: string[]
}

/** `metacontroller-hooks <version>`, from package.json. */
export function versionLine (): string {
  const { name, version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { name: string, version: string }
  return `${name} ${version}`
}

function flagName (name: string, option: Options[string]): string {
  return `--${name}${option.short === undefined ? '' : `/-${option.short}`}${option.type === 'string' ? ' <value>' : ''}`
}

/**
 * A command's arguments by its spec. `--help` (or `-h`) anywhere before a `--` throws a CommandAnswer with the usage,
 * before anything else is read: the command then does nothing. A flag it does not know, a value missing, or a number
 * of arguments outside the spec's, a CommandError of one line with exit code 2.
 */
export function parseCommand<O extends Options> (args: string[], spec: CommandSpec<O>): ParsedCommand<O> {
  const flags = args.includes('--') ? args.slice(0, args.indexOf('--')) : args
  if (flags.includes('--help') || flags.includes('-h')) throw new CommandAnswer(spec.usage.trimEnd())
  if (spec.version === true && flags.includes('--version')) throw new CommandAnswer(versionLine())
  const usageLine = spec.usage.split('\n')[0] ?? ''
  const known = [...Object.entries(spec.options).map(([name, option]) => flagName(name, option)), '--help/-h', ...spec.version === true ? ['--version'] : []]
  let parsed
  try {
    parsed = parseArgs({ args, options: spec.options, allowPositionals: true, strict: true })
  } catch (error) {
    const { tokens } = parseArgs({ args, options: spec.options, allowPositionals: true, strict: false, tokens: true })
    const unknown = tokens.find((token) => token.kind === 'option' && !Object.hasOwn(spec.options, token.name))
    if (unknown?.kind === 'option') throw new CommandError(`unknown flag ${unknown.rawName}: it knows ${known.join(', ')}`, 2)
    throw new CommandError(`${(error as Error).message.replace(/\.?\s.*To specify a positional.*$/s, '')}; ${usageLine}`, 2)
  }
  const [fewest, most] = spec.positionals ?? [0, 0]
  const { positionals } = parsed
  if (positionals.length > most) throw new CommandError(`unexpected argument ${JSON.stringify(positionals[most])}: ${usageLine}`, 2)
  if (positionals.length < fewest) throw new CommandError(usageLine, 2)
  return { values: parsed.values as ParsedCommand<O>['values'], positionals }
}

/**
 * The arguments of the process's command: on `--help` or `--version` it prints and exits 0, on a mistake it prints
 * one line and exits 2 (1 if the spec says so), so that the command starts only with arguments it understands.
 */
export function commandArguments<O extends Options> (spec: CommandSpec<O>, args = process.argv.slice(2)): ParsedCommand<O> {
  try {
    return parseCommand(args, spec)
  } catch (error) {
    if (error instanceof CommandAnswer) {
      process.stdout.write(`${error.message}\n`)
      process.exit(0)
    }
    if (!(error instanceof CommandError)) throw error
    process.stderr.write(`${error.message}\n`)
    process.exit(error.exitCode)
  }
}

/** A file's text (`-`: standard input), or a CommandError naming it. */
export async function readInput (io: CommandIo, path: string): Promise<string> {
  return await (path === '-' ? io.stdin() : readFile(resolve(io.cwd, path), 'utf8')).catch((error: NodeJS.ErrnoException) => {
    throw new CommandError(`cannot read ${path}: ${error.code ?? error.message}`)
  })
}

/**
 * Runs a tool as a command: a CommandAnswer is printed with exit code 0, a CommandError is one line on stderr and its
 * exit code, as is a DefinitionError (exit code 1) where the tool imports the registry as it runs; anything else is a
 * bug, with its stack.
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
    if (error instanceof CommandAnswer) {
      process.stdout.write(`${error.message}\n`)
      return
    }
    // A controller defined so that it cannot work is its author's mistake too, when a tool imports the registry.
    if (error instanceof DefinitionError) {
      process.stderr.write(`${error.message}\n`)
      process.exitCode = 1
      return
    }
    if (!(error instanceof CommandError)) throw error
    process.stderr.write(`${error.message}\n`)
    process.exitCode = error.exitCode
  }
}

/** The flags of node:test that the test commands pass on to it. */
export const NODE_TEST_OPTIONS = {
  'test-name-pattern': { type: 'string', multiple: true },
  'test-skip-pattern': { type: 'string', multiple: true },
  'test-concurrency': { type: 'string' },
  'test-timeout': { type: 'string' },
  'test-only': { type: 'boolean' }
} as const

/** The node:test flags among a command's parsed values, as node takes them. */
export function nodeTestFlags (values: Record<string, string | boolean | Array<string | boolean> | undefined>): string[] {
  return Object.keys(NODE_TEST_OPTIONS).flatMap((name) => [values[name] ?? []].flat().map((value) => value === true ? `--${name}` : `--${name}=${String(value)}`))
}

export const NODE_TEST_USAGE = '  --test-name-pattern, --test-skip-pattern, --test-concurrency, --test-timeout and --test-only go to node:test.'
