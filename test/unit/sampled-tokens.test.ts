import { sampledTokensOf, tokenFields, sampledFields } from '../../activities/clients/sampled-tokens';

/** Reading the sampled ids and log-probs from the chat completion choices of real engines' shapes. */
describe('sampledTokensOf', () => {
  const content = (tokens: string[], logprobs: number[]) => ({
    content: tokens.map((token, i) => ({ token, logprob: logprobs[i], bytes: null, top_logprobs: [] })),
  });

  test("vLLM with return_token_ids: the choice's token_ids, log-probs from the content", () => {
    const choice = {
      index: 0,
      message: { role: 'assistant', content: 'Hi' },
      finish_reason: 'stop',
      token_ids: [13347, 151645],
      logprobs: content(['token_id:13347', 'token_id:151645'], [-0.5, -0.01]),
    };
    expect(sampledTokensOf(choice)).toEqual({ ids: [13347, 151645], logprobs: [-0.5, -0.01] });
  });

  test('vLLM with return_tokens_as_token_ids only: the ids read from the log-prob token names', () => {
    const choice = { message: { content: 'Hi' }, logprobs: content(['token_id:7', 'token_id:0'], [-1, -2]) };
    expect(sampledTokensOf(choice)).toEqual({ ids: [7, 0], logprobs: [-1, -2] });
  });

  test('SGLang: token_ids and prompt_token_ids per choice, log-prob tokens as text', () => {
    const choice = {
      message: { content: 'Hi!' },
      token_ids: [40, 41, 2],
      prompt_token_ids: [1, 2, 3],
      matched_stop: 2,
      logprobs: content(['H', 'i', '!'], [-0.1, -0.2, -0.3]),
    };
    expect(sampledTokensOf(choice)).toEqual({ ids: [40, 41, 2], logprobs: [-0.1, -0.2, -0.3] });
  });

  test('ids without a log-prob for every id keep the ids and drop the log-probs', () => {
    expect(sampledTokensOf({ token_ids: [1, 2, 3], logprobs: content(['a', 'b'], [-1, -1]) })).toEqual({
      ids: [1, 2, 3],
    });
    expect(sampledTokensOf({ token_ids: [1], logprobs: content(['a'], [0.5]) })).toEqual({ ids: [1] });
    expect(sampledTokensOf({ token_ids: [1], logprobs: null })).toEqual({ ids: [1] });
  });

  test('an engine that returns no ids gives none: the fallback to text', () => {
    expect(sampledTokensOf({ message: { content: 'Hi' }, logprobs: null })).toBeUndefined();
    expect(sampledTokensOf({ logprobs: content(['H', 'i'], [-1, -1]) })).toBeUndefined();
    expect(sampledTokensOf({ logprobs: content(['token_id:3', 'i'], [-1, -1]) })).toBeUndefined();
  });

  test('ids that are not token ids are a malformed answer, not a fallback', () => {
    expect(() => sampledTokensOf({ token_ids: [1, -2] })).toThrow(
      /token_ids: expected an array of non-negative/,
    );
    expect(() => sampledTokensOf({ token_ids: [1.5] })).toThrow(/token_ids/);
    expect(() => sampledTokensOf({ token_ids: 'abc' })).toThrow(/token_ids/);
  });
});

describe('tokenFields', () => {
  test('turns with ids and the inserted text between them, the log-probs of the sampled ids only', () => {
    const fields = tokenFields([
      { sampled: { ids: [1, 2], logprobs: [-1, -2] } },
      { inserted: '<information>x</information>' },
      { sampled: { ids: [3], logprobs: [-3] } },
      { inserted: '' },
    ]);
    expect(fields).toEqual({
      completionTokens: [{ ids: [1, 2] }, { text: '<information>x</information>' }, { ids: [3] }],
      behaviourLogprobs: [-1, -2, -3],
    });
  });

  test('a turn without ids makes the whole row fall back to text', () => {
    expect(tokenFields([{ sampled: { ids: [1] } }, { inserted: 'obs' }, { sampled: undefined }])).toEqual({});
    expect(sampledFields(undefined)).toEqual({});
  });

  test('a turn without log-probs keeps the ids and drops the log-probs, which must cover every id', () => {
    expect(tokenFields([{ sampled: { ids: [1], logprobs: [-1] } }, { sampled: { ids: [2] } }])).toEqual({
      completionTokens: [{ ids: [1] }, { ids: [2] }],
    });
  });

  test("the turns' temperature and top-p go with the ids, left out at 1 and for a greedy sample", () => {
    const at = (temperature: number, topP: number) => ({ ids: [1], logprobs: [-1], temperature, topP });
    expect(sampledFields(at(0.7, 0.95))).toMatchObject({ temperature: 0.7, topP: 0.95 });
    expect(sampledFields(at(0.6, 1))).toEqual({
      completionTokens: [{ ids: [1] }],
      behaviourLogprobs: [-1],
      temperature: 0.6,
    });
    expect(sampledFields(at(1, 1))).toEqual({ completionTokens: [{ ids: [1] }], behaviourLogprobs: [-1] });
    expect(sampledFields(at(0, 0.9))).toEqual({ completionTokens: [{ ids: [1] }], behaviourLogprobs: [-1] });
    // A record stored before the fields has none: its row trains at 1, as it did.
    expect(sampledFields({ ids: [1], logprobs: [-1] })).not.toHaveProperty('temperature');
    expect(
      tokenFields([{ sampled: at(0.7, 0.95) }, { inserted: 'obs' }, { sampled: at(0.7, 0.95) }]),
    ).toMatchObject({ temperature: 0.7, topP: 0.95 });
    expect(() => tokenFields([{ sampled: at(0.7, 0.95) }, { sampled: at(1, 0.95) }])).toThrow(
      /sampled at temperature 0.7, top-p 0.95 and at temperature 1, top-p 0.95; a training row is scored at one/,
    );
  });
});
