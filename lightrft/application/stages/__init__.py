"""The stages of one RL step's experience, each a small unit over a shared work record.

Collection (:mod:`collection`): generate (:mod:`generate`) then score (:mod:`score`), refilled
by :mod:`dynamic_sampling` when asked, plus ReMax's :mod:`greedy_baseline`. Annotation, in
order: :mod:`shaping`, :mod:`turn_credit`, then in the reference phase (:mod:`in_phase`) the
forward plan (:mod:`no_grad_forward`), :mod:`trained_row_selection`, :mod:`old_logprobs`,
:mod:`reference_logprobs`, :mod:`teacher_logprobs`, :mod:`critic_values`,
:mod:`rollout_correction`, :mod:`kl_estimate`, :mod:`advantages`, :mod:`high_entropy`; last
:mod:`experience_batch`. :mod:`assembly` chooses the stages once from the settings.
"""
