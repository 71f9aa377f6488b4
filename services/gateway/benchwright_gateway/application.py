"""The gateway's own state: access tokens and idempotency records."""

import uuid

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import RecordConflictError

from benchwright_gateway.domain import AccessToken, IdempotencyRecord, token_hash
from benchwright_shared.ids import new_pat


class GatewayApplication(Application[uuid.UUID]):
    name = "gateway"

    def mint_token(self, account: str, scopes: list[str], label: str) -> str:
        """Mint a PAT; the plain token is returned once and never stored."""
        token = new_pat()
        self.save(AccessToken(token_hash(token), account, scopes, label))
        return token

    def verify(self, token: str) -> AccessToken | None:
        hashed = token_hash(token)
        try:
            found: AccessToken = self.repository.get(AccessToken.create_id(hashed))
        except AggregateNotFoundError:
            return None
        return None if found.revoked else found

    def remember_launch(
        self, account: str, key: str, body_sha256: str, run_id: str
    ) -> IdempotencyRecord:
        """Record the launch for ``key``; returns the first record if one exists."""
        record = IdempotencyRecord(account, key, body_sha256, run_id)
        try:
            self.save(record)
        except RecordConflictError:
            return self.find_launch(account, key)  # type: ignore[return-value]
        return record

    def find_launch(self, account: str, key: str) -> IdempotencyRecord | None:
        try:
            found: IdempotencyRecord = self.repository.get(
                IdempotencyRecord.create_id(account, key)
            )
        except AggregateNotFoundError:
            return None
        return found
