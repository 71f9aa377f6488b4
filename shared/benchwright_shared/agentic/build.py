"""A task's environment on a backend that builds its Dockerfile (e2b: a template).

There the Dockerfile is run, not read as a plan (``environment.py``): the whole
``environment/`` folder goes to the backend's build (``EnvironmentBuild``) and
nothing is laid into the sandbox but Harbor's places. What is still read here is
what a command must be given, since every command starts with only the
environment it is handed:

    FROM <any image>, RUN, COPY / ADD of files in environment/   -> built
    WORKDIR, ENV, ARG                                             -> built, and read here
    CMD, ENTRYPOINT, USER, LABEL, EXPOSE, ...                      -> the builder's business
    a second FROM, COPY --from, ADD <url>                         -> refused

A refusal names the task, the Dockerfile's line and the step, as for the local plan.
"""

import math
import posixpath

from benchwright_shared.agentic.dataset import AgenticTask
from benchwright_shared.agentic.dockerfile import (
    DockerfileError,
    Instruction,
    json_or_words,
    parse_dockerfile,
    substitute,
)
from benchwright_shared.agentic.environment import DOCKERFILE, EnvironmentPlan, _Planner
from benchwright_shared.contracts.commands import MAX_BUILD_TIMEOUT_S, EnvironmentBuild
from benchwright_shared.refusal import Refused

# The sandbox backends that build a task's Dockerfile into an image of their own.
DOCKERFILE_BUILDERS = ("e2b",)
# Harbor's working directory when the Dockerfile names none.
HARBOR_WORKDIR = "/app"
# The steps read here; the builder takes every other one as it is.
READ_HERE = ("ARG", "FROM", "WORKDIR", "ENV", "COPY", "ADD")


def builds_dockerfiles(backend: str | None) -> bool:
    """Whether ``backend`` builds a task's Dockerfile (else it is read as a plan)."""
    return backend in DOCKERFILE_BUILDERS


class _BuildReader(_Planner):
    """The planner's walk, for a Dockerfile some builder runs: any base, RUN and the
    rest pass; what is read is the working directory and the variables."""

    def __init__(self, context: dict[str, bytes]) -> None:
        super().__init__(context)
        self.workdir_set = False

    def step(self, step: Instruction) -> None:
        if step.keyword in READ_HERE or self.base is None:
            super().step(step)
            self.workdir_set = self.workdir_set or step.keyword == "WORKDIR"

    def from_(self, step: Instruction) -> None:
        if self.base is not None:
            raise DockerfileError(step.line, step.text, "multi-stage builds are not supported")
        words = [
            w for w in substitute(step.args, self.global_args).split() if not w.startswith("--")
        ]
        if not words or (len(words) > 1 and (len(words) != 3 or words[1].upper() != "AS")):
            raise DockerfileError(step.line, step.text, "FROM takes an image [AS name]")
        self.base = words[0]

    def copy(self, step: Instruction) -> None:
        """Only checked: each source is in ``environment/`` (the build copies it)."""
        rest = step.args
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            rest = rest.lstrip()
            if flag.partition("=")[0] == "--from":
                raise DockerfileError(step.line, step.text, "COPY --from needs a multi-stage build")
        items = json_or_words(rest)
        if len(items) < 2:
            raise DockerfileError(
                step.line, step.text, f"{step.keyword} takes sources and a destination"
            )
        variables = self.variables()
        for item in items[:-1]:
            source = substitute(item, variables)
            if "://" in source or source.startswith("git@"):
                raise DockerfileError(step.line, step.text, "ADD of a URL is not built; ship it")
            if not source.startswith("<<"):
                self.matches(step, source)


def template_plan(task: AgenticTask) -> EnvironmentPlan:
    """The plan for a task whose Dockerfile a backend builds: nothing laid in but
    Harbor's places; the working directory is ``task.toml``'s, else the Dockerfile's
    WORKDIR, else ``/app``; the variables are its ENV.

    Raises ``Refused`` (422) naming the task, its Dockerfile's line and step.
    """
    source = task.files.get(DOCKERFILE)
    reader = _BuildReader(task.under("environment"))
    try:
        if source is None:
            raise DockerfileError(
                0, "", "environment/ has no Dockerfile to build from", "missing_dockerfile"
            )
        plan = reader.run(parse_dockerfile(source.decode(errors="replace")))
    except DockerfileError as exc:
        at = f"environment/Dockerfile line {exc.line}: `{exc.text}`: " if exc.line else ""
        raise Refused(
            422,
            "the task's environment cannot be built",
            f"task {task.name!r}: {at}{exc.why}",
            field=task.field_for(DOCKERFILE),
            code=exc.code,
        ) from None
    workdir = plan.workdir if reader.workdir_set else HARBOR_WORKDIR
    if task.config.environment.workdir:
        workdir = posixpath.normpath(posixpath.join(workdir, task.config.environment.workdir))
    return EnvironmentPlan(
        base=plan.base,
        workdir=workdir,
        env=plan.env,
        directories=(workdir,),
        notes=(f"environment/Dockerfile (FROM {plan.base}) is built into the backend's image",),
    )


def environment_build(task: AgenticTask) -> EnvironmentBuild:
    """What a builder needs to make the task's image: its ``environment/`` folder,
    the Dockerfile, the task's build bound (``build_timeout_sec``) and resources."""
    context = {path: data.decode() for path, data in sorted(task.under("environment").items())}
    environment = task.config.environment
    return EnvironmentBuild(
        task=task.name,
        dockerfile=context.get("Dockerfile", ""),
        context=context,
        timeout_s=min(max(environment.build_timeout_sec, 1.0), MAX_BUILD_TIMEOUT_S),
        cpu_count=math.ceil(environment.cpus) if environment.cpus else None,
        memory_mb=environment.memory_mb,
    )
