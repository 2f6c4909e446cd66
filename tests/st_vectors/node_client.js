// ST's server-side calls, made the way ST 1.12.6 makes them under Node 20: node-fetch v2 sets
// `Connection: close` when no agent is given, and Node 20's global agent keeps sockets alive. If the
// server does not answer `Connection: close`, the next back-to-back request can go out on a socket
// the server is closing (ECONNRESET / "socket hang up"). Usage: node node_client.js PORT MODE
// MODE = close (node-fetch's headers) | keepalive (no Connection header). Prints a JSON summary.
'use strict';
const http = require('http');

const port = Number(process.argv[2]);
const mode = process.argv[3] || 'close';
const texts = ['The dragon sleeps in the northern mountains', 'Bread and cheese for breakfast at the inn',
  'A red dragon attacked the mountain village'];

function post(path, body) {
  return new Promise((resolve) => {
    const data = Buffer.from(JSON.stringify(body));
    const headers = {
      'Content-Type': 'application/json', 'Accept': '*/*', 'Content-Length': data.length,
      'User-Agent': 'node-fetch/1.0 (+https://github.com/bitinn/node-fetch)', 'Accept-Encoding': 'gzip,deflate',
    };
    if (mode === 'close') headers['Connection'] = 'close';
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers, agent: http.globalAgent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection || '', body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', (err) => resolve({ status: 0, error: String(err && err.code || err) }));
    req.end(data);
  });
}

(async () => {
  const results = [];
  for (let round = 0; round < 10; round++) {
    for (const text of texts) {  // 1.12.6's Ollama path: one request per text, sequentially
      results.push(await post('/api/embeddings', { prompt: text, model: 'nomic-embed-text', keep_alive: -1 }));
    }
    results.push(await post('/v1/embeddings', { input: texts }));  // llamacpp: one batch
    results.push(await post('/api/vector/list', { collectionId: 'node-client', source: 'transformers' }));
  }
  const summary = {
    count: results.length,
    statuses: [...new Set(results.map((r) => r.status))],
    errors: results.filter((r) => r.error).map((r) => r.error),
    connection: [...new Set(results.map((r) => r.connection))],
    keepAlive: http.globalAgent.keepAlive === true,
  };
  process.stdout.write(JSON.stringify(summary));
})();
