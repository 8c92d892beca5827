import assert from 'node:assert/strict';
import { HttpError, HttpServer } from '../../../src/observability/http-server.ts';
import { createLogger } from '../../../src/observability/logger.ts';

describe('HttpServer', () => {
  let server: HttpServer;
  let base: string;

  before(async () => {
    server = new HttpServer(createLogger({ level: 'silent' }));
    server.route('GET', '/things/:name', (r) => ({ status: 200, body: { name: r.params.name, q: r.query.get('q') } }));
    server.route('POST', '/things', (r) => {
      if (typeof r.body !== 'object' || r.body === null) throw new HttpError(400, 'a JSON object is needed');
      return { status: 201, body: r.body };
    });
    server.route('GET', '/broken', () => {
      throw new Error('bug');
    });
    server.route('GET', '/files/*', (r) => ({ status: 200, body: r.params['*'], contentType: 'text/plain' }));
    await server.start([{ host: '127.0.0.1', port: 0 }]);
    base = `http://127.0.0.1:${server.listeners[0]!.port}`;
  });

  after(() => server.close());

  it('routes by method and path, with decoded parameters', async () => {
    const res = await fetch(`${base}/things/a%20b?q=1`);
    assert.deepEqual(await res.json(), { name: 'a b', q: '1' });
    assert.equal((await fetch(`${base}/things/a/b`)).status, 404);
    assert.equal((await fetch(`${base}/things/a`, { method: 'DELETE' })).status, 405);
    assert.equal(await (await fetch(`${base}/files/a/b.css`)).text(), 'a/b.css');
  });

  it('answers bad bodies with 400 and bugs with 500, and serves on', async () => {
    const post = (body: string) => fetch(`${base}/things`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    assert.equal((await post('{"x":1}')).status, 201);
    assert.equal((await post('{nope')).status, 400);
    assert.equal((await post('3')).status, 400);
    assert.equal((await post('x'.repeat(2 * 1024 * 1024))).status, 413);
    assert.equal((await fetch(`${base}/broken`)).status, 500);
    assert.equal((await fetch(`${base}/things/z`)).status, 200);
  });
});
