"""A webhook receiver that checks each post with the Standard Webhooks
library (https://www.standardwebhooks.com, `standardwebhooks` on PyPI):
what scripts/test-inbox.sh points the server's approval notices at.

    python webhook_receiver.py SECRET PORT_FILE NOTICES_FILE

Listens on a free loopback port, written to PORT_FILE once it listens.
A post whose signature the library accepts is answered 204 and its notice
appended to NOTICES_FILE as one JSON line; any other is answered 401, and
`refused: <why>` appended instead.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook, WebhookVerificationError

secret, port_file, notices_file = sys.argv[1:4]
webhook = Webhook(secret)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {name: value for name, value in self.headers.items()}
        try:
            notice = webhook.verify(body, headers)
            line, status = json.dumps(notice), 204
        except WebhookVerificationError as error:
            line, status = f"refused: {error}", 401
        with open(notices_file, "a", encoding="utf-8") as notices:
            notices.write(line + "\n")
        self.send_response(status)
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
with open(port_file + ".tmp", "w", encoding="utf-8") as port:
    port.write(str(server.server_address[1]))
import os  # noqa: E402

os.replace(port_file + ".tmp", port_file)
server.serve_forever()
