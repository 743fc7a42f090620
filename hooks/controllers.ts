import { bookStore } from './bookstore/index.js'
import type { Controller } from './framework/controller.js'
import { postgresWriter } from './postgres-writer/index.js'
import { podSet } from './podset/index.js'
import { pulsarConsumer } from './pulsar-consumer/index.js'

/** Every controller this server hosts: routes, manifests, the render tool and the e2e install are derived from this list. */
export const controllers: readonly Controller[] = [postgresWriter, bookStore, podSet, pulsarConsumer]
