import { listen } from './listen.js'
import { podSetAnswer } from './podset-answer.js'

/** A peer: the PodSet hook on plain `node:http`, with `JSON.parse` and nothing else. */

listen((request, response) => {
  if (request.method !== 'POST' || request.url !== '/podset/sync') {
    response.writeHead(404).end()
    return
  }
  const chunks = []
  request.on('data', (chunk) => chunks.push(chunk))
  request.on('end', () => {
    let answer
    try {
      answer = JSON.stringify(podSetAnswer(JSON.parse(Buffer.concat(chunks).toString('utf8'))))
    } catch (error) {
      response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ message: error.message }))
      return
    }
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(answer)
  })
})
