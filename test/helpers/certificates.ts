import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface CertificateSet {
  dir: string
  /** PEM file paths. */
  caCert: string
  serverCert: string
  serverKey: string
  clientCert: string
  clientKey: string
  /** A client certificate signed by a CA the server does not trust. */
  strangerCert: string
  strangerKey: string
  read: (path: string) => Buffer
  remove: () => void
}

const openssl = (dir: string, ...args: string[]): void => {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
}

function authority (dir: string, name: string): void {
  openssl(dir, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.crt`)
}

function signed (dir: string, name: string, ca: string, extensions: string): void {
  writeFileSync(join(dir, `${name}.ext`), extensions)
  openssl(dir, 'req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`)
  openssl(dir, 'x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '1', '-extfile', `${name}.ext`, '-out', `${name}.crt`)
}

/** A throw-away CA with a server certificate for 127.0.0.1/localhost and client certificates, made with openssl. */
export function generateCertificates (): CertificateSet {
  const dir = mkdtempSync(join(tmpdir(), 'hooks-tls-'))
  authority(dir, 'ca')
  authority(dir, 'stranger-ca')
  signed(dir, 'server', 'ca', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n')
  signed(dir, 'client', 'ca', 'extendedKeyUsage=clientAuth\n')
  signed(dir, 'stranger', 'stranger-ca', 'extendedKeyUsage=clientAuth\n')
  const path = (file: string): string => join(dir, file)
  return {
    dir,
    caCert: path('ca.crt'),
    serverCert: path('server.crt'),
    serverKey: path('server.key'),
    clientCert: path('client.crt'),
    clientKey: path('client.key'),
    strangerCert: path('stranger.crt'),
    strangerKey: path('stranger.key'),
    read: (file) => readFileSync(file),
    remove: () => { rmSync(dir, { recursive: true, force: true }) }
  }
}
