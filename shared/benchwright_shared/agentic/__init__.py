"""Agentic tasks in Harbor's format: the pure core every service shares, no I/O.

    files {path: content}  --load_dataset-->  AgenticDataset {name: AgenticTask}
    AgenticDataset         --dataset_rows / files_from_rows-->  an agentic subset's rows
    AgenticTask            --environment_plan-->  EnvironmentPlan   (local backend)
                           --kubernetes_image-->  image reference   (Kubernetes)
                           --template_plan + environment_build-->  a build (e2b)
    task.toml network      --network_allowed / host_allowed-->  what the sandbox may reach
    /logs/verifier/reward.{json,txt}  --parse_reward-->  Reward | VerifierError
    agent_args of agent "product"     --ProductAgentArgs-->  how a product starts and is driven

A malformed dataset or an environment the backend cannot make is a ``Refused``
naming the launch field at fault; a verifier that wrote no usable reward is a
``VerifierError``, distinct from a reward of 0.
"""

from benchwright_shared.agentic.build import (
    DOCKERFILE_BUILDERS,
    builds_dockerfiles,
    environment_build,
    template_plan,
)
from benchwright_shared.agentic.config import (
    NetworkMode,
    NetworkPolicy,
    TaskConfig,
    host_allowed,
    network_allowed,
)
from benchwright_shared.agentic.dataset import (
    DEFAULT_LIMITS,
    MAX_DATASET_BYTES,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_TASKS,
    AgenticDataset,
    AgenticTask,
    DatasetLimits,
    load_dataset,
)
from benchwright_shared.agentic.dockerfile import DockerfileError, parse_dockerfile
from benchwright_shared.agentic.environment import (
    EnvironmentPlan,
    environment_plan,
    image_plan,
    kubernetes_image,
)
from benchwright_shared.agentic.product import PRODUCT_AGENT, ProductAgentArgs
from benchwright_shared.agentic.reward import (
    REWARD_JSON_PATH,
    REWARD_TEXT_PATH,
    Reward,
    VerifierError,
    parse_reward,
)
from benchwright_shared.agentic.subset import dataset_rows, files_from_rows, is_agentic_row

__all__ = [
    "DEFAULT_LIMITS",
    "DOCKERFILE_BUILDERS",
    "MAX_DATASET_BYTES",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_TASKS",
    "PRODUCT_AGENT",
    "REWARD_JSON_PATH",
    "REWARD_TEXT_PATH",
    "AgenticDataset",
    "AgenticTask",
    "DatasetLimits",
    "DockerfileError",
    "EnvironmentPlan",
    "NetworkMode",
    "NetworkPolicy",
    "ProductAgentArgs",
    "Reward",
    "TaskConfig",
    "VerifierError",
    "builds_dockerfiles",
    "dataset_rows",
    "environment_build",
    "environment_plan",
    "files_from_rows",
    "host_allowed",
    "image_plan",
    "is_agentic_row",
    "kubernetes_image",
    "load_dataset",
    "network_allowed",
    "parse_dockerfile",
    "parse_reward",
    "template_plan",
]
