"""Reward models as reward sources: scalar (sequence-classification) reward models with their
training-side network, LoRA and export, and generative judges with strict verdict parsers."""

from lightrft.adapters.reward_models.card import RewardModelCard, ScoreNormalization
from lightrft.adapters.reward_models.encoding import PairEncoding, encode_pairs
from lightrft.adapters.reward_models.loading import load_reward_classifier, load_reward_tokenizer
from lightrft.adapters.reward_models.lora import RewardLoraParams
from lightrft.adapters.reward_models.scalar import HfScalarRewardModel
from lightrft.adapters.reward_models.scalar_net import ScalarRewardNet

__all__ = [
    "HfScalarRewardModel",
    "PairEncoding",
    "RewardLoraParams",
    "RewardModelCard",
    "ScalarRewardNet",
    "ScoreNormalization",
    "encode_pairs",
    "load_reward_classifier",
    "load_reward_tokenizer",
]
