/**
 * MAE prompt templates L1–L5, from the paper's appendix A.1 (Listings 1–5). The texts follow the paper word
 * for word; the PDF's line wrapping and indentation are undone, and what its extraction garbled is restored
 * (`</ answer>`, `highquality`, the `**` after "understanding", `\Rightarrow` as `=>`). How the question and the
 * reference are appended is not in the paper: the reference goes between the reference code's
 * `### Reference Questions:` markers, the Solver's question after `### Task:` (an inference). Every prompt is
 * one user message, as in the reference code.
 */
import type { ChatMessage } from '../../clients/trainer-contract';

/** The L2/L3 output block's placeholder: a question that is only this was never written. */
export const QUESTION_PLACEHOLDER = '[Your generated question here]';

const SOLVER = `Task: Generate a High-Quality Response to a Given Task
You will be given a cognitive, creative, logical, mathematical, or planning-related task. Your job is to generate a complete, high-quality response that satisfies the task's constraints and demonstrates clear, structured reasoning or creativity.
### Instructions:
- Carefully read and understand the task.
- Think step by step - break down the task, simulate it mentally if needed, and reason through constraints.
- Then directly write your final response inside a pair of <answer></answer> tags (no need to restate or reformat the task).
- Your output should:
 * Be **correct** or **plausibly optimal**, given the task
 * **Fulfill all constraints** in the task
 * Be **clear** and **structured**
 * Avoid any vagueness or randomness
### Good Response Traits:
- For reasoning tasks: shows logical progression and result
- For generation tasks: respects the given constraints
- For math/logic/planning: includes a final answer that could be evaluated
- For creative tasks: coherent and original`;

const OUTPUT_BLOCK = `Follow the following format:
<question>
${QUESTION_PLACEHOLDER}
</question>
MAKE SURE THAT EVERY GENERATED QUESTION AND **ONLY THE GENERATED QUESTION** IS INSIDE THE <question></question> TAGS!
USING THE CORRECT FORMAT AS GIVEN IS IMPORTANT!`;

const PROPOSER_NO_REFERENCE = `## Task: Create a Challenging and Original Task
Design a new and intellectually demanding task that tests **complex reasoning, creative thinking, structured planning, or deep understanding**. The task should be suitable for evaluation in general intelligence, reasoning benchmarks or instruction following.
You may design a task that resembles a quiz, puzzle or symbolic reasoning prompt. Focus on structure, challenge, and clarity.
### Task Requirements:
- The task must be:
 * **Self-contained** and clearly described
 * **Non-trivial**, requiring multiple reasoning steps, constraints, or synthesis
 * **Deterministic** or tightly constrained (even if open-ended in form)
 * **Free from cultural bias or real-time information**
 * **Difficult** but **not impossible** to solve
- Accepted Domains include:
 * Logic puzzles and reasoning tasks
 * Context comprehension
 * Common knowledge Q&A
 * Pattern-based math or symbolic challenges
 * Spatial planning or constraint problems
 * Instruction followings tasks
- Avoid:
 * Trivia questions or subjective writing
 * Ambiguous or taste-based open-ended prompts
 * Any dependency on web access or recent knowledge
 * Tasks with no clear solvability path
${OUTPUT_BLOCK}`;

const PROPOSER_WITH_REFERENCE = `## Task: Create a Challenging and Modified Version of a Reference Task
Given one **reference task**, your goal is to design a **new, more challenging task** by making **controlled perturbations** to the original. The modifications should **increase reasoning depth, introduce extra constraints, or add multi-step dependencies** while keeping the problem **self-contained and solvable**.
You must preserve the **core domain or reasoning type** of the reference (e.g., if it's a logic puzzle, keep it a logic puzzle) but ensure the **surface content and structure are new**. You may:
- Add additional constraints or intermediate steps
- Replace elements with analogous but more complex structures
- Introduce distractors or traps that require careful reasoning
- Change numerical values, symbolic rules, or conditions to increase difficulty
### Task Requirements:
- The modified task must be:
 * **Self-contained** and clearly described
 * **Significantly different in surface form** from the reference, but maintain same reasoning type
 * **More challenging** - requiring additional steps or deeper analysis than the reference
 * **Deterministic** or tightly constrained
 * **Free from cultural bias, real-time info, or factual recall**
- Avoid:
 * Trivia questions or subjective writing
 * Ambiguous or taste-based open-ended prompts
 * Any dependency on web access or recent knowledge
 * Tasks with no clear solvability path
${OUTPUT_BLOCK}`;

const SCORE_LINE = '<score>X</score> (where X is an integer from 1 to 10)';

const judgeAnswerPrompt = (question: string, answer: string): string =>
  `Please evaluate the following solution to a question/problem following a strict rubric.
Question/Problem: ${question}
Generated Solution: ${answer}
First, analyze the solution in the <think> and </think> tags below:
<think>
STRICT RUBRIC:
- Factual correctness is mandatory. ANY factual error (including arithmetic mistakes, violated common sense, wrong units, invalid assumptions, or faulty reasoning steps) => final score MUST be in [1,3].
- Meaningless or excessive repetition, rambling, or filler content => final score MUST be in [1,3].
- Hallucinated references, fabricated data, unsupported claims, or contradictions => final score MUST be in [1,3].
- Completeness & directness: The answer must fully address the asked question. Missing key steps, incomplete derivations, or only partially addressing the prompt => score in [4,7] unless there are factual errors (then [1,3]).
- Only answers that are entirely correct, follow instructions, are concise (no redundant repetition) may receive [8,10].
[Write your detailed analysis here: identify any factual errors, faulty reasoning steps or repetition issues. If ANY such issue exists, note that the score band must be [1,3]. If none, justify why it qualifies for 8-10; otherwise place it in 4-7.]
</think>
Then provide a score from 1 to 10 between <score> and </score> consistent with your thoughts where:
- 8-10: Flawless or near-flawless: entirely correct; no factual/logic/common-sense/calculation errors; concise with no meaningless repetition; fully answers the question.
- 4-7: Generally on-topic and partially correct, but has omissions or clarity problems (NO factual errors).
- 1-3: ANY factual/logic/common-sense/calculation error OR hallucination OR large meaningless repetition OR severe irrelevance.
${SCORE_LINE}`;

const judgeQuestionPrompt = (question: string): string =>
  `Please evaluate the quality of the following question generation following a strict rubric.
Question: ${question}
First, analyze the question in the <think> and </think> tags below:
<think>
STRICT RUBRIC (Question):
- If the question is unsolvable as stated (insufficient information, internal contradiction, presupposition failure), violates common sense, logically incoherent or simply not in the form of a question => final score MUST be in [1,3].
- If the question is unsafe/inappropriate or not actually a question => final score MUST be in [1,3].
- If the question is too open-ended => final score MUST be in [1,3].
- Clarity & completeness: ambiguous wording, missing constraints, or unclear objectives => typically [4,7] (unless it's unsolvable/incoherent, then [1,3]).
- Only questions that are fully clear, well-formed, logically sound, feasible/solvable, relevant, and concise (no redundant repetition) may receive [8,10].
[Write your detailed analysis here: check solvability, logical soundness, clarity, relevance, and redundancy. If ANY unsolvability or commonsense violation exists, score must be [1,3].]
</think>
Then provide a score from 1 to 10 between <score> and </score> consistent with your thoughts where:
- 8-10: Perfectly clear, feasible, self-contained, logically sound, and concise; appropriate and relevant.
- 4-7: Generally reasonable but with notable ambiguity, missing details, or minor issues (NO unsolvability/commonsense violations).
- 1-3: Unsolvable/contradictory/commonsense-violating/unsafe/irrelevant/not a valid question.
${SCORE_LINE}`;

const user = (content: string): ChatMessage[] => [{ role: 'user', content }];

/** L1: the Solver, for the trained answer and the N_sample difficulty answers alike. */
export function solverMessages(question: string): ChatMessage[] {
  return user(`${SOLVER}\n\n### Task:\n${question}`);
}

/** L2 without a reference, L3 with one (the reference's question only, never an answer). */
export function proposerMessages(reference: string | undefined): ChatMessage[] {
  return user(
    reference === undefined
      ? PROPOSER_NO_REFERENCE
      : `${PROPOSER_WITH_REFERENCE}\n\n### Reference Questions:\n${reference}\n### Reference Questions Ends Here`,
  );
}

/** L4: the Judge scores an answer to a question. */
export function judgeAnswerMessages(question: string, answer: string): ChatMessage[] {
  return user(judgeAnswerPrompt(question, answer));
}

/** L5: the Judge scores a proposed question. */
export function judgeQuestionMessages(question: string): ChatMessage[] {
  return user(judgeQuestionPrompt(question));
}
