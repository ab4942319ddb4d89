"""Cross-checks vwf's webhook signature schemes against the senders' own libraries.

Usage: webhook_signatures.py SECRET BODY TIMESTAMP SLACK_SIGNATURE STRIPE_HEADER

Prints one JSON object: whether slack_sdk's SignatureVerifier and stripe's
Webhook.construct_event accept the signatures the Rust test computed by the published
algorithms (`accepts`), and the headers each library computes itself for the same body and
timestamp (`signed`), which the Rust test then sends to vwf.
"""

import json
import sys
import time

import stripe
from slack_sdk.signature import SignatureVerifier


def main() -> None:
    secret, body, timestamp, slack_signature, stripe_header = sys.argv[1:6]
    slack = SignatureVerifier(secret)
    accepts = {"slack": slack.is_valid(body=body, timestamp=timestamp, signature=slack_signature)}
    try:
        stripe.Webhook.construct_event(body, stripe_header, secret, tolerance=300)
        accepts["stripe"] = True
    except stripe.SignatureVerificationError:
        accepts["stripe"] = False
    now = str(int(time.time()))
    stripe_signature = stripe.WebhookSignature._compute_signature(f"{now}.{body}", secret)
    signed = {
        "slack": {
            "X-Slack-Request-Timestamp": now,
            "X-Slack-Signature": slack.generate_signature(timestamp=now, body=body),
        },
        "stripe": {"Stripe-Signature": f"t={now},v1={stripe_signature}"},
    }
    print(json.dumps({"accepts": accepts, "signed": signed}))


if __name__ == "__main__":
    main()
