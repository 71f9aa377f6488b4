"""A task's environment without Docker: the Dockerfile steps a local sandbox can honour.

The local backend builds nothing and reaches no network, so a task's
``environment/Dockerfile`` is read as a plan, not run:

    FROM python:3.x[-slim|-bookworm...], debian:*, ubuntu:*   -> the local base
    WORKDIR, ENV, USER, ARG                                     -> honoured
    COPY / ADD of files in environment/                         -> files laid in place
    LABEL, EXPOSE, CMD, ENTRYPOINT, VOLUME, HEALTHCHECK, ...    -> ignored, with a note
    RUN, any other base image, COPY --from, ADD <url>           -> refused

A step that cannot be honoured refuses the whole launch with the task, the line
and the step named, never a half-built sandbox. Kubernetes needs an image
reference instead (``kubernetes_image``).
"""

import fnmatch
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from benchwright_shared.agentic.dataset import AgenticTask
from benchwright_shared.agentic.dockerfile import (
    DockerfileError,
    Instruction,
    json_or_words,
    parse_dockerfile,
    split_words,
    substitute,
)
from benchwright_shared.refusal import Refused

DOCKERFILE = "environment/Dockerfile"
# What the variables of a Debian or python image hold before the Dockerfile sets any.
BASE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
# Variants of the python image that are Debian underneath (alpine and windows are not).
DEBIAN_SUFFIXES = ("slim", "bookworm", "bullseye", "buster", "trixie")
LOCAL_BASES = ("python", "debian", "ubuntu")
DOCKER_HUB = ("docker.io", "index.docker.io", "registry-1.docker.io")
IGNORED = {
    "LABEL": "metadata only",
    "MAINTAINER": "metadata only",
    "EXPOSE": "ports are forwarded by the platform",
    "CMD": "the agent runs commands itself",
    "ENTRYPOINT": "the agent runs commands itself",
    "VOLUME": "the sandbox's disk is its own",
    "STOPSIGNAL": "the platform ends the sandbox",
    "HEALTHCHECK": "readiness is task.toml's [environment.healthcheck]",
    "SHELL": "no RUN step is honoured, so no shell is needed",
    "ONBUILD": "applies only to images built on this one",
}
# Places no task file may be laid: the kernel's and the device files.
FORBIDDEN_ROOTS = ("/proc", "/sys", "/dev")
ARCHIVE = re.compile(r"\.(tar|tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz|tar\.zst)$", re.IGNORECASE)


@dataclass(frozen=True)
class EnvironmentPlan:
    """What to lay into a fresh sandbox so that it is the task's environment.

    ``files`` are keyed by absolute sandbox path; ``directories`` are made first
    (WORKDIR and COPY destinations); ``base`` is the image the Dockerfile named.
    """

    base: str
    workdir: str
    env: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, bytes] = field(default_factory=dict)
    directories: tuple[str, ...] = ()
    user: str | None = None
    notes: tuple[str, ...] = ()


_VERSION = r"3(?:\.\d+){0,2}(?:[a-z]+\d+)?"
_SUFFIX = "(?:" + "|".join(DEBIAN_SUFFIXES) + ")"
PYTHON_TAG = re.compile(rf"^(?:latest|{_VERSION}|(?:{_VERSION}-)?{_SUFFIX}(?:-{_SUFFIX})?)$")


def base_problem(image: str) -> str | None:
    """Why ``image`` cannot stand for the local base, or None when it can."""
    reference = image.split("@", 1)[0]
    parts = reference.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        if parts[0] not in DOCKER_HUB:
            return f"{image} is from registry {parts[0]}; the local base stands in for Docker Hub's"
        parts = parts[1:]
    if len(parts) == 2 and parts[0] == "library":
        parts = parts[1:]
    name, _, tag = parts[-1].partition(":")
    if len(parts) != 1 or name not in LOCAL_BASES:
        return (
            f"{image} is not a base the local backend has: it runs python:3.x (Debian "
            "variants), debian:* and ubuntu:* images; build elsewhere or pick one of those"
        )
    if name == "python" and tag and not PYTHON_TAG.match(tag):
        return f"{image} is not a Debian python:3 image (alpine and windows tags are not)"
    return None


class _Planner:
    """Walks a Dockerfile's instructions, keeping what the sandbox must look like."""

    def __init__(self, context: Mapping[str, bytes]) -> None:
        self.context = context
        self.base: str | None = None
        self.global_args: dict[str, str] = {}
        self.args: dict[str, str] = {}
        self.env: dict[str, str] = {}
        self.workdir = "/"
        self.files: dict[str, bytes] = {}
        self.directories: list[str] = []
        self.user: str | None = None
        self.notes: list[str] = []

    def variables(self) -> dict[str, str]:
        # ENV wins over ARG of the same name, as in Docker.
        return {**BASE_ENV, **self.args, **self.env}

    def plan(self) -> EnvironmentPlan:
        if self.base is None:
            raise DockerfileError(0, "", "the Dockerfile has no FROM", "dockerfile_syntax")
        return EnvironmentPlan(
            base=self.base,
            workdir=self.workdir,
            env=MappingProxyType(dict(self.env)),
            files=MappingProxyType(dict(self.files)),
            directories=tuple(self.directories),
            user=self.user,
            notes=tuple(self.notes),
        )

    def run(self, instructions: list[Instruction]) -> EnvironmentPlan:
        for step in instructions:
            self.step(step)
        return self.plan()

    def step(self, step: Instruction) -> None:
        keyword = step.keyword
        if keyword == "ARG":
            self.arg(step)
        elif keyword == "FROM":
            self.from_(step)
        elif self.base is None:
            raise DockerfileError(step.line, step.text, "a Dockerfile starts with FROM (or ARG)")
        elif keyword == "WORKDIR":
            self.workdir = self.absolute(step, substitute(step.args, self.variables()))
            self.add_directory(self.workdir)
        elif keyword == "ENV":
            self.env.update(_env_pairs(step, self.variables()))
        elif keyword == "USER":
            self.user = substitute(step.args, self.variables()) or None
        elif keyword in ("COPY", "ADD"):
            self.copy(step)
        elif keyword in IGNORED:
            self.notes.append(f"line {step.line}: {keyword} ignored ({IGNORED[keyword]})")
        elif keyword == "RUN":
            raise DockerfileError(
                step.line,
                step.text,
                "RUN cannot be honoured without Docker: the local sandbox has no network and "
                "runs no build commands; ship the files the step would make in environment/ "
                "and COPY them, or run the task on a backend that builds images",
            )
        else:
            raise DockerfileError(step.line, step.text, f"unknown instruction {keyword}")

    def arg(self, step: Instruction) -> None:
        scope = self.global_args if self.base is None else self.args
        for item in split_words(step):
            name, has_default, default = item.partition("=")
            if not re.fullmatch(r"\w+", name):
                raise DockerfileError(step.line, step.text, f"bad ARG name {name!r}")
            if has_default:
                scope[name] = substitute(default, {**self.global_args, **self.variables()})
            else:
                # An ARG declared before FROM is in scope after it once redeclared.
                scope[name] = self.global_args.get(name, "") if self.base is not None else ""

    def from_(self, step: Instruction) -> None:
        if self.base is not None:
            raise DockerfileError(
                step.line, step.text, "multi-stage builds need Docker; use one FROM"
            )
        words = [
            w for w in substitute(step.args, self.global_args).split() if not w.startswith("--")
        ]
        if not words or (len(words) > 1 and (len(words) != 3 or words[1].upper() != "AS")):
            raise DockerfileError(step.line, step.text, "FROM takes an image [AS name]")
        problem = base_problem(words[0])
        if problem:
            raise DockerfileError(step.line, step.text, problem, "unsupported_base_image")
        self.base = words[0]
        self.notes.append(f"line {step.line}: FROM {words[0]} runs on the local base")

    def absolute(self, step: Instruction, path: str) -> str:
        joined = posixpath.normpath(posixpath.join(self.workdir, path))
        if joined.startswith("//"):
            joined = joined[1:]
        if any(joined == root or joined.startswith(root + "/") for root in FORBIDDEN_ROOTS):
            raise DockerfileError(
                step.line,
                step.text,
                f"{joined} is the kernel's, not the task's",
                "unsafe_destination",
            )
        return joined

    def add_directory(self, path: str) -> None:
        if path not in self.directories:
            self.directories.append(path)

    def copy(self, step: Instruction) -> None:
        rest = step.args
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            rest = rest.lstrip()
            name = flag.partition("=")[0]
            if name == "--from":
                raise DockerfileError(step.line, step.text, "COPY --from needs a multi-stage build")
            if name in ("--chown", "--chmod"):
                self.notes.append(f"line {step.line}: {name} ignored (the sandbox owns its files)")
            elif name != "--link":
                raise DockerfileError(
                    step.line, step.text, f"{step.keyword} {name} is not supported"
                )
        items = json_or_words(rest)
        if len(items) < 2:
            raise DockerfileError(
                step.line, step.text, f"{step.keyword} takes sources and a destination"
            )
        if any(item.startswith("<<") for item in items):
            raise DockerfileError(step.line, step.text, "heredocs are not supported; ship a file")
        variables = self.variables()
        sources = [substitute(item, variables) for item in items[:-1]]
        destination = substitute(items[-1], variables)
        if step.keyword == "ADD":
            for source in sources:
                if "://" in source or source.startswith("git@"):
                    raise DockerfileError(step.line, step.text, "ADD of a URL needs the network")
                if ARCHIVE.search(source):
                    raise DockerfileError(
                        step.line, step.text, "ADD would unpack an archive; ship it unpacked"
                    )
        target = self.absolute(step, destination)
        into_directory = (
            destination.endswith("/")
            or len(sources) > 1
            or any(_is_glob(s) for s in sources)
            or target in self.directories
        )
        for source in sources:
            for relative, inner in self.matches(step, source):
                if inner is None:
                    path = (
                        posixpath.join(target, posixpath.basename(relative))
                        if into_directory
                        else target
                    )
                else:
                    path = posixpath.join(target, inner)
                    into_directory = True
                self.files[path] = self.context[relative]
        if into_directory:
            self.add_directory(target)

    def matches(self, step: Instruction, source: str) -> list[tuple[str, str | None]]:
        """(context path, path within the copied directory or None for a file)."""
        cleaned = posixpath.normpath(source.lstrip("/") or ".")
        if cleaned == ".." or cleaned.startswith("../"):
            raise DockerfileError(
                step.line, step.text, f"{source} is outside environment/", "copy_source_missing"
            )
        if _is_glob(cleaned):
            pattern = cleaned.split("/")
            entries = set(self.context) | {
                "/".join(p.split("/")[:i]) for p in self.context for i in range(1, p.count("/") + 1)
            }
            picked = sorted(
                entry
                for entry in entries
                if len(entry.split("/")) == len(pattern)
                and all(
                    fnmatch.fnmatchcase(a, b)
                    for a, b in zip(entry.split("/"), pattern, strict=True)
                )
            )
        else:
            picked = [cleaned]
        found: list[tuple[str, str | None]] = []
        for entry in picked:
            if entry in self.context:
                found.append((entry, None))
                continue
            prefix = "" if entry == "." else entry + "/"
            found += [
                (p, p.removeprefix(prefix)) for p in sorted(self.context) if p.startswith(prefix)
            ]
        if not found:
            raise DockerfileError(
                step.line,
                step.text,
                f"{source} is not in the task's environment/ folder",
                "copy_source_missing",
            )
        return found


def _is_glob(path: str) -> bool:
    return any(char in path for char in "*?[")


def _env_pairs(step: Instruction, variables: Mapping[str, str]) -> dict[str, str]:
    first = step.args.split(None, 1)
    if not first:
        raise DockerfileError(step.line, step.text, "ENV takes NAME=value", "dockerfile_syntax")
    if "=" not in first[0]:
        # The legacy form: ENV NAME the rest of the line.
        return {first[0]: substitute(first[1] if len(first) > 1 else "", variables)}
    pairs: dict[str, str] = {}
    for item in split_words(step):
        name, has_value, value = item.partition("=")
        if not has_value or not re.fullmatch(r"\w+", name):
            raise DockerfileError(
                step.line, step.text, f"bad ENV entry {item!r}", "dockerfile_syntax"
            )
        # Every value on one line sees the variables as they were before it.
        pairs[name] = substitute(value, variables)
    return pairs


def environment_plan(task: AgenticTask) -> EnvironmentPlan:
    """The plan that makes a fresh local sandbox the task's environment.

    Raises ``Refused`` (422) naming the task, its Dockerfile's line and step.
    """
    context = task.under("environment")
    source = task.files.get(DOCKERFILE)
    image = task.config.environment.docker_image
    try:
        planner = _Planner(context)
        if source is None:
            if not image:
                raise DockerfileError(
                    0, "", "environment/ has no Dockerfile to build from", "missing_dockerfile"
                )
            planner.from_(Instruction(line=0, keyword="FROM", args=image, text=f"FROM {image}"))
            plan = planner.plan()
        else:
            plan = planner.run(parse_dockerfile(source.decode(errors="replace")))
    except DockerfileError as exc:
        at = f"environment/Dockerfile line {exc.line}: `{exc.text}`: " if exc.line else ""
        where = DOCKERFILE if source is not None else "task.toml"
        raise Refused(
            422,
            "the task's environment cannot be built here",
            f"task {task.name!r}: {at}{exc.why}",
            field=task.field_for(where),
            code=exc.code,
        ) from None
    notes = list(plan.notes)
    workdir = plan.workdir
    if task.config.environment.workdir:
        workdir = posixpath.normpath(posixpath.join(workdir, task.config.environment.workdir))
        notes.append(f"task.toml [environment] workdir {workdir} overrides WORKDIR")
    if task.config.environment.env:
        notes.append("task.toml [environment] env not passed: host variables never enter a sandbox")
    return EnvironmentPlan(
        base=plan.base,
        workdir=workdir,
        env=plan.env,
        files=plan.files,
        directories=plan.directories,
        user=plan.user,
        notes=tuple(notes),
    )


def image_plan(task: AgenticTask) -> EnvironmentPlan:
    """The plan for a task that names its own image (``[environment] docker_image``):
    the image is the environment, so nothing is laid in but Harbor's places; the
    working directory is ``task.toml``'s, else ``/app``, Harbor's convention."""
    image = kubernetes_image(task)
    workdir = posixpath.normpath(posixpath.join("/app", task.config.environment.workdir or "."))
    return EnvironmentPlan(
        base=image,
        workdir=workdir,
        directories=(workdir,),
        notes=(f"runs the task's own image {image}; its Dockerfile, if any, is not built",),
    )


def kubernetes_image(task: AgenticTask) -> str:
    """The image a Kubernetes pod runs the task in: ``[environment] docker_image``.

    Raises ``Refused`` (422) when the task has only a Dockerfile: a cluster runs
    images, it does not build them.
    """
    image = task.config.environment.docker_image
    if not image:
        raise Refused(
            422,
            "the task needs an image build",
            f"task {task.name!r} has a Dockerfile but no [environment] docker_image; build and "
            "push the image, then name it in task.toml",
            field=task.field_for("task.toml"),
            code="image_build_needed",
        )
    return image
