"""Gymnasium environments over the library's models (each passes stable-baselines3's check_env)."""

from tjap.learned.envs.nsa_repair import NSARepairEnv

__all__ = ["NSARepairEnv"]
