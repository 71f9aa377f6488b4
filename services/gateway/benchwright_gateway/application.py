"""The gateway's own state: logins, sessions, access tokens and idempotency records."""

import functools
import secrets
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import RecordConflictError

from benchwright_gateway.domain import (
    ALL_SCOPES,
    SESSION_PREFIX,
    SESSION_TTL_S,
    SIGN_IN_LINK_PREFIX,
    SIGN_IN_LINK_TTL_S,
    AccessToken,
    AccountSettings,
    IdempotencyRecord,
    IdempotentAnswer,
    Login,
    Session,
    SignInLink,
    TokenIndex,
    hash_password,
    password_matches,
    token_hash,
)
from benchwright_shared.ids import new_pat
from benchwright_shared.refusal import Refused


@functools.cache
def _decoy_hash() -> str:
    """A hash no password opens, checked in place of an unknown user's."""
    return hash_password(secrets.token_urlsafe(32), secrets.token_bytes(16))


@dataclass(frozen=True)
class Caller:
    """Who a credential speaks for: a PAT's scopes, or a session (the account itself)."""

    account: str
    scopes: tuple[str, ...]
    kind: str  # "pat" | "session"
    token_id: str | None = None


class GatewayApplication(Application[uuid.UUID]):
    name = "gateway"

    # -- logins and sessions -----------------------------------------------------------
    def create_login(
        self, username: str, password: str, *, account: str | None = None, admin: bool = False
    ) -> Login:
        """A new login (and, without ``account``, a new account for it)."""
        if len(password) < 12:
            raise Refused(400, detail="a password needs at least 12 characters", field="password")
        login = Login(
            username,
            account or f"acct_{uuid.uuid4().hex[:12]}",
            hash_password(password, secrets.token_bytes(16)),
            admin,
        )
        try:
            self.save(login)
        except RecordConflictError:
            raise Refused(
                409, detail=f"the username {username!r} is taken", field="username"
            ) from None
        return login

    def find_login(self, username: str) -> Login | None:
        try:
            found: Login = self.repository.get(Login.create_id(username))
        except AggregateNotFoundError:
            return None
        return found

    def open_session(self, username: str, password: str) -> tuple[str, Session]:
        login = self.find_login(username)
        # The same answer for an unknown user and a wrong password, after as long:
        # an unknown user's password is checked too, against a decoy.
        stored = login.password_hash if login is not None else _decoy_hash()
        if not password_matches(password, stored) or login is None:
            raise Refused(
                401, "login failed", "unknown username or wrong password", field="password"
            )
        token, session = self._new_session(login)
        self.save(session)
        return token, session

    def _new_session(self, login: Login) -> tuple[str, Session]:
        token = SESSION_PREFIX + secrets.token_urlsafe(32)
        session = Session(
            token_hash(token), login.account, login.username, login.admin,
            time.time() + SESSION_TTL_S,
        )  # fmt: skip
        return token, session

    def close_session(self, token: str) -> None:
        """Sign out: the session's token stops working at once."""
        if not token.startswith(SESSION_PREFIX):
            return
        try:
            session: Session = self.repository.get(Session.create_id(token_hash(token)))
        except AggregateNotFoundError:
            return
        if not session.closed:
            session.close()
            self.save(session)

    # -- one-time sign-in links ----------------------------------------------------------
    def issue_sign_in_link(self, username: str) -> str:
        """A token that opens one session for ``username``, once, within minutes.

        Whoever can call this already holds the deployment (``benchwright up``'s
        process); the token is shown once and stored only as its hash."""
        if self.find_login(username) is None:
            raise Refused(404, detail=f"no login {username!r}", field="username")
        token = SIGN_IN_LINK_PREFIX + secrets.token_urlsafe(32)
        self.save(SignInLink(token_hash(token), username, time.time() + SIGN_IN_LINK_TTL_S))
        return token

    def redeem_sign_in_link(self, token: str) -> tuple[str, Session]:
        """Spend a sign-in link on a new session; a used, expired or unknown one is 401."""
        refused = Refused(
            401, "sign-in link not valid", "the link was used, has expired or is unknown",
            field="token",
        )  # fmt: skip
        try:
            link: SignInLink = self.repository.get(SignInLink.create_id(token_hash(token)))
        except AggregateNotFoundError:
            raise refused from None
        login = self.find_login(link.username)
        if login is None or not link.usable(time.time()):
            raise refused
        link.use()
        session_token, session = self._new_session(login)
        try:
            # One transaction: two redemptions racing conflict on the link's version.
            self.save(link, session)
        except RecordConflictError:
            raise refused from None
        return session_token, session

    # -- personal access tokens --------------------------------------------------------
    def mint_token(self, account: str, scopes: list[str], label: str) -> str:
        """Mint a PAT; the plain token is returned once and never stored."""
        unknown = sorted(set(scopes) - set(ALL_SCOPES))
        if unknown:
            raise Refused(
                400, detail=f"unknown scopes {unknown}; known: {list(ALL_SCOPES)}", field="scopes"
            )
        token = new_pat()
        hashed = token_hash(token)
        index = self._token_index(account)
        index.add(hashed[:12], hashed, label, sorted(set(scopes)), datetime.now(UTC).isoformat())
        self.save(AccessToken(hashed, account, sorted(set(scopes)), label), index)
        return token

    def list_tokens(self, account: str) -> list[dict[str, object]]:
        index = self._token_index(account)
        return [
            {k: v for k, v in entry.items() if k != "hashed"} for entry in index.tokens.values()
        ]

    def revoke_token(self, account: str, token_id: str) -> None:
        index = self._token_index(account)
        entry = index.tokens.get(token_id)
        if entry is None:
            raise Refused(404, detail=f"no token {token_id!r}", field="token_id")
        if entry["revoked"]:
            return
        token: AccessToken = self.repository.get(AccessToken.create_id(str(entry["hashed"])))
        token.revoke()
        index.revoke(token_id)
        self.save(token, index)

    def _token_index(self, account: str) -> TokenIndex:
        try:
            found: TokenIndex = self.repository.get(TokenIndex.create_id(account))
        except AggregateNotFoundError:
            return TokenIndex(account)
        return found

    # -- who is calling ----------------------------------------------------------------
    def verify(self, token: str) -> Caller | None:
        hashed = token_hash(token)
        if token.startswith(SESSION_PREFIX):
            try:
                session: Session = self.repository.get(Session.create_id(hashed))
            except AggregateNotFoundError:
                return None
            if not session.valid(time.time()):
                return None
            scopes = ALL_SCOPES if session.admin else tuple(s for s in ALL_SCOPES if s != "admin")
            return Caller(session.account, tuple(scopes), "session")
        try:
            found: AccessToken = self.repository.get(AccessToken.create_id(hashed))
        except AggregateNotFoundError:
            return None
        if found.revoked:
            return None
        return Caller(found.account, tuple(found.scopes), "pat", hashed[:12])

    def token_account(self, token: str) -> str | None:
        """The account of a valid PAT (used at start-up to keep the saved admin token)."""
        caller = self.verify(token)
        return caller.account if caller and caller.kind == "pat" else None

    # -- account settings ---------------------------------------------------------------
    def account_settings(self, account: str) -> AccountSettings:
        try:
            found: AccountSettings = self.repository.get(AccountSettings.create_id(account))
        except AggregateNotFoundError:
            return AccountSettings(account)
        return found

    def put_setting(self, account: str, key: str, value: Any | None) -> AccountSettings:
        """Set ``key`` (already checked against the schema), or clear it with None."""
        held = self.account_settings(account)
        now = datetime.now(UTC).isoformat()
        if value is None:
            if key not in held.values:
                return held
            held.clear(key, now)
        else:
            held.set(key, value, now)
        self.save(held)
        return held

    # -- idempotency ------------------------------------------------------------------
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

    def remember_answer(
        self, account: str, operation: str, key: str, body_sha256: str, answer: dict[str, Any]
    ) -> IdempotentAnswer:
        """Keep ``answer`` for ``key``; returns the first one if another came first."""
        record = IdempotentAnswer(account, operation, key, body_sha256, answer)
        try:
            self.save(record)
        except RecordConflictError:
            return self.find_answer(account, operation, key)  # type: ignore[return-value]
        return record

    def find_answer(self, account: str, operation: str, key: str) -> IdempotentAnswer | None:
        try:
            found: IdempotentAnswer = self.repository.get(
                IdempotentAnswer.create_id(account, operation, key)
            )
        except AggregateNotFoundError:
            return None
        return found

    def find_launch(self, account: str, key: str) -> IdempotencyRecord | None:
        try:
            found: IdempotencyRecord = self.repository.get(
                IdempotencyRecord.create_id(account, key)
            )
        except AggregateNotFoundError:
            return None
        return found
