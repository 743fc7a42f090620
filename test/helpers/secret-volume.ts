import { mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * A file of a Secret volume, written as the kubelet writes it: each version in a folder of its own, `..data` pointing
 * at the current one, and the file a link through `..data`. An update swaps `..data` in one rename, so a reader never
 * sees half a file, and the file's own path never changes.
 */
export class SecretVolume {
  private version = 0

  constructor (readonly dir: string, private readonly key: string) {}

  get file (): string { return join(this.dir, this.key) }

  async write (text: string): Promise<void> {
    const version = `..${++this.version}`
    await mkdir(join(this.dir, version))
    await writeFile(join(this.dir, version, this.key), text)
    await symlink(version, join(this.dir, '..data_tmp'))
    await rename(join(this.dir, '..data_tmp'), join(this.dir, '..data'))
    if (this.version === 1) await symlink(join('..data', this.key), this.file)
    else await rm(join(this.dir, `..${this.version - 1}`), { recursive: true })
  }
}
