"""Webhooks: signed POSTs to an account's endpoints when its runs settle.

``domain`` (endpoints, deliveries, the outbox, signing and backoff rules),
``application`` (the eventsourcing application in the gateway's store),
``delivery`` (the run-log consumer and the deliverer), ``crypto`` (sealing
signing secrets), ``settings`` (``BW_WEBHOOKS_*``). See docs/decisions/0018.
"""
