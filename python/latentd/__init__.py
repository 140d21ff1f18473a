"""latentd: a Python client of the latentd topic-model daemon.

Standard library only (HTTP/JSON through urllib); pandas, when installed,
turns topic, document-topic and topic-word tables into DataFrames. See
client.py for the calls, messages.py for the answers, model_export.py for
the whole model (export_model), errors.py for the exceptions, and
docs/api.md "Python client" for the whole API. estimator.py (imported on
its own: it needs scikit-learn) is LatentdLDA, a scikit-learn estimator
that trains through latentctl; gensim_export.py writes a model directory
as a gensim LdaModel (latentctl export --format gensim runs it).
"""

from latentd.client import DEFAULT_ADDRESS, DEFAULT_TIMEOUT_SECONDS, Client
from latentd.errors import (AuthenticationError, DeadlineExceededError,
                            InvalidArgumentError, LatentdError, NotFoundError,
                            PermissionDeniedError, ResourceExhaustedError,
                            UnavailableError)
from latentd.messages import (Checkpoint, Document, DocumentMixture,
                              DocumentTopics, DocumentWeight, Inference,
                              IngestResult, LogLikelihoodPart, ModelVersion,
                              Neighbor, Similar,
                              Status, Topic, TopicDocuments, TopicList,
                              TopicWeight, UserProfile, WordTopics,
                              WordWeight)
from latentd.model_export import Model

__version__ = "0.1.0"

__all__ = [
    "AuthenticationError", "Checkpoint", "Client", "DEFAULT_ADDRESS",
    "DEFAULT_TIMEOUT_SECONDS", "DeadlineExceededError", "Document",
    "DocumentMixture", "DocumentTopics", "DocumentWeight", "Inference", "IngestResult", "InvalidArgumentError",
    "LatentdError", "LogLikelihoodPart", "Model", "ModelVersion", "Neighbor", "NotFoundError",
    "PermissionDeniedError", "ResourceExhaustedError", "Similar", "Status",
    "Topic", "TopicDocuments",
    "TopicList", "TopicWeight", "UnavailableError", "UserProfile",
    "WordTopics", "WordWeight",
]
