"""The public API's answers, as types: the gateway declares them as response models,
the SDK reads them, and the published OpenAPI (and so the TypeScript SDK) derives
from them. One module per area; nothing here does I/O."""
