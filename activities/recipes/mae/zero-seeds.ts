/**
 * D0 of the zero setting (spec mae.md §3): 16 questions that set the domain of evolution without any real
 * data. The paper's were written by the model itself and collected by hand; these are stand-ins written for
 * this project in the same spirit (logic, arithmetic, planning, comprehension, instruction following), not
 * taken from any benchmark.
 */
export const ZERO_SETTING_SEEDS: readonly string[] = [
  'Four friends (Ana, Ben, Caro, Dev) sit in a row. Ana is not at either end, Ben sits directly right of Caro, and Dev is not next to Ana. List every seating order from left to right that satisfies all three conditions.',
  'A tank holds 240 liters. Pipe A fills it in 6 hours and pipe B empties it in 10 hours. Starting empty with both pipes open, after how many hours is the tank full?',
  'Find the smallest positive integer that leaves remainder 2 when divided by 3, remainder 3 when divided by 5, and remainder 4 when divided by 7.',
  'A sequence starts 2, 5, 11, 23, 47. Describe the rule that generates it and give the next two terms.',
  'You must schedule five one-hour meetings (P, Q, R, S, T) between 9:00 and 14:00. P must precede R, S cannot be at 11:00, Q and T must be back to back, and R must be after 12:00. Give one valid schedule and explain why it satisfies every constraint.',
  'Write a sentence of exactly twelve words in which every word starts with a different letter and the third word is a color.',
  'A shop discounts a jacket by 20% and then raises the discounted price by 20%. Is the final price higher, lower or equal to the original price, and by what percentage of the original?',
  'In a village every person either always tells the truth or always lies. X says "Y is a liar." Y says "X and I are of the same kind." What is each of them?',
  'A robot on a grid starts at (0, 0) facing north. It executes: forward 3, turn right, forward 2, turn right, forward 5, turn left, forward 1. Where does it end and which way does it face?',
  'How many distinct ways can the letters of the word LEVEL be arranged so that no two identical letters are adjacent?',
  'Explain why a metal spoon left in a pot of hot soup feels hotter to the touch than a wooden spoon left in the same pot, even though both have been in the soup for the same time.',
  'A recipe for 6 people needs 450 g of flour and 3 eggs. You have 1 kg of flour and 5 eggs. What is the largest whole number of people you can cook for, and which ingredient limits you?',
  'Write a Python function that returns the length of the longest substring without repeated characters, and state its time complexity.',
  'Three boxes are labeled "apples", "oranges" and "mixed", and every label is wrong. You may take one fruit from one box without looking inside. Which box do you choose, and how do you then relabel all three boxes correctly?',
  'Read the statement: "All managers attended the meeting; some attendees left early; nobody who left early signed the sheet." Which of these must be true: (a) some managers did not sign the sheet, (b) not every attendee signed the sheet, (c) no manager left early? Justify each.',
  'A clock shows 3:40. What is the smaller angle, in degrees, between the hour hand and the minute hand?',
];
