"""Bases of the reward sources shared by the reward adapters (rule rewards, reward models, the
reward-service client, the fakes). Imports only the domain and the standard library."""
