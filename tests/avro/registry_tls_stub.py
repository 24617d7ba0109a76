#!/usr/bin/env python3
"""registry_tls_stub.py CERT KEY USER PASSWORD: a Confluent-compatible schema registry's three calls
(register, schema by id, compatibility) over HTTPS with HTTP basic authentication, on 127.0.0.1 and
a free port, which it prints on its first line. For the registry client's TLS and credentials
(test_sreg_tls); the real registry (Apicurio) serves the other Avro tests. Each request is logged
on stderr."""
import base64, http.server, json, ssl, sys

cert, key, user, password = sys.argv[1:5]
schemas = {}


class H(http.server.BaseHTTPRequestHandler):
    def _auth(self):
        want = 'Basic ' + base64.b64encode(f'{user}:{password}'.encode()).decode()
        if self.headers.get('Authorization', '') != want:
            self._send(401, {'error_code': 401, 'message': 'Unauthorized'})
            return False
        return True

    def _send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/vnd.schemaregistry.v1+json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        if not self._auth():
            return
        n = int(self.headers.get('Content-Length', '0'))
        req = json.loads(self.rfile.read(n) or b'{}')
        if not self.path.endswith('/versions') or 'schema' not in req:
            return self._send(422, {'error_code': 422, 'message': 'bad request'})
        sid = schemas.setdefault(req['schema'], 7 + len(schemas))
        self._send(200, {'id': sid})

    def do_GET(self):
        if not self._auth():
            return
        if self.path.startswith('/schemas/ids/'):
            sid = int(self.path.rsplit('/', 1)[1])
            for s, i in schemas.items():
                if i == sid:
                    return self._send(200, {'schema': s})
            return self._send(404, {'error_code': 40403, 'message': 'Schema not found'})
        if self.path.startswith('/config'):
            return self._send(200, {'compatibilityLevel': 'BACKWARD'})
        self._send(404, {'error_code': 404, 'message': 'not found'})

    def log_message(self, fmt, *args):
        sys.stderr.write('registry_tls_stub: ' + (fmt % args) + '\n')


srv = http.server.HTTPServer(('127.0.0.1', 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
