"""The dashboard: pages for people, served by the gateway under ``/`` beside ``/v1``.

Server-rendered Jinja2 templates and one small hand-written JavaScript module, all
shipped inside this package (decision 0042): installing Benchwright needs no Node and
no network. A browser signs in to an ordinary session (``sessions``); pages read the
gateway's own read models through the API's authorization rule, and every change a
page makes is a call to the ``/v1`` route that makes it (``inproc``).
"""

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from benchwright_gateway.context import GatewayContext
from benchwright_gateway.web import account, registry, review, runs, signin, tasks
from benchwright_gateway.web.inproc import InProcessApi
from benchwright_gateway.web.routing import Web
from benchwright_gateway.web.sessions import Browser, Verify
from benchwright_gateway.web.templating import STATIC_DIR


def install(http: FastAPI, ctx: GatewayContext, verify: Verify) -> None:
    """Add the pages and their static files to the gateway's app."""
    web = Web(ctx, Browser(verify), InProcessApi(http))
    # The review queue before the run page: its form posts to a path that the run
    # page's action route (`/runs/{id}/{action}`) would take otherwise.
    for module in (signin, review, runs, tasks, registry, account):
        http.include_router(module.build_router(web))
    http.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
